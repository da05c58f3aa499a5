# uninstall.cmake - removes what `cmake --install` recorded (`make uninstall`):
#   DESTDIR=... cmake -DMANIFEST=BUILD/install_manifest.txt -P packaging/uninstall.cmake
# Every file and link the manifest lists, under $ENV{DESTDIR}; the byte code
# Python left beside an installed module (__pycache__/NAME.*.pyc); then each
# folder on the way up from them that is empty and fluxon's own (a path with a
# component "fluxon": include/fluxon, the Python package, /etc/fluxon,
# share/doc/fluxon). A folder that still holds something, such as /etc/fluxon
# with a real config in it, stays; nothing outside the manifest is removed.
if(NOT MANIFEST OR NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "uninstall: no install manifest '${MANIFEST}' (nothing was installed from this build)")
endif()
set(destdir "$ENV{DESTDIR}")
file(STRINGS "${MANIFEST}" installed)

set(folders "")
foreach(f IN LISTS installed)
  set(p "${destdir}${f}")
  if(EXISTS "${p}" OR IS_SYMLINK "${p}")
    file(REMOVE "${p}")
    message(STATUS "Removed: ${p}")
  endif()
  get_filename_component(dir "${f}" DIRECTORY)
  if(f MATCHES "\\.py$")
    get_filename_component(stem "${f}" NAME_WE)
    file(GLOB pyc "${destdir}${dir}/__pycache__/${stem}.*.pyc")
    if(pyc)
      file(REMOVE ${pyc})
    endif()
    list(APPEND folders "${dir}/__pycache__")
  endif()
  list(APPEND folders "${dir}")
endforeach()

# From each folder upwards: a parent tried while a child still held files is
# tried again on the way up from that child.
list(REMOVE_DUPLICATES folders)
foreach(dir IN LISTS folders)
  while(dir MATCHES "/fluxon(/|$)" AND IS_DIRECTORY "${destdir}${dir}")
    execute_process(COMMAND rmdir "${destdir}${dir}" RESULT_VARIABLE rc ERROR_QUIET)
    if(NOT rc EQUAL 0)
      break() # not empty: it and its parents stay
    endif()
    message(STATUS "Removed folder: ${destdir}${dir}")
    get_filename_component(dir "${dir}" DIRECTORY)
  endwhile()
endforeach()
