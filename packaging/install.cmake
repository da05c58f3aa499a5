# install.cmake - what `make install` puts where, included by the top
# CMakeLists.txt once the targets exist. Configure with CMAKE_INSTALL_PREFIX
# (the Makefile passes PREFIX): the systemd units and fluxon.pc carry it; DESTDIR
# is honoured by `cmake --install`, and packaging/uninstall.cmake removes what
# install_manifest.txt lists. With prefix /usr (libdir as GNUInstallDirs picks):
#
#   bin/                      fluxon, fluxon-master, fluxon-owner
#   lib/<arch>/               libfluxon.so.VERSION, .so.MAJOR (the soname), .so
#   lib/<arch>/pkgconfig/     fluxon.pc
#   include/fluxon/           the public headers
#   lib/python3/dist-packages/fluxon/   python/fluxon/**/*.py and _native*.so
#   lib/systemd/system/       fluxon-master.service, fluxon-owner@.service
#   /etc/fluxon/              master.yaml.example, owner.yaml.example (no real config)
#   share/doc/fluxon/         README.md
#
# fx_installables builds just these (make install builds nothing else).

# The folder whose master.yaml and owner-N.yaml the units read, where the
# examples go: /etc/fluxon for the prefixes /usr and /usr/local, else the
# prefix's own etc (a private prefix needs no root).
set(FX_CONFIG_DIR "" CACHE STRING "Folder of the daemons' configs (empty: /etc/fluxon, or PREFIX/etc/fluxon outside /usr and /usr/local)")
set(FX_SYSTEMD_UNIT_DIR "lib/systemd/system" CACHE STRING "Where the systemd units go (relative: under the prefix)")
set(FX_PYTHON_INSTALL_DIR "" CACHE STRING "Where the Python package fluxon goes (empty: Debian's dist-packages of the prefix)")
set(FX_PYTHON_RPATH "" CACHE STRING "The Python extension's installed rpath (empty: the installed libdir, relative to the package; setup.py: $ORIGIN)")

if(FX_CONFIG_DIR)
  set(fx_confdir "${FX_CONFIG_DIR}")
elseif(CMAKE_INSTALL_PREFIX MATCHES "^/usr(/local)?/?$")
  set(fx_confdir "/etc/fluxon")
else()
  set(fx_confdir "${CMAKE_INSTALL_FULL_SYSCONFDIR}/fluxon")
endif()

# Absolute forms for the files that name installed paths.
set(FX_FULL_BINDIR "${CMAKE_INSTALL_FULL_BINDIR}")
set(FX_FULL_DOCDIR "${CMAKE_INSTALL_FULL_DOCDIR}")
set(FX_CONF_DIR "${fx_confdir}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(FX_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  set(FX_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(FX_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(FX_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()

set(fx_pkg ${CMAKE_CURRENT_LIST_DIR})
set(fx_gen ${CMAKE_BINARY_DIR}/packaging)
configure_file(${fx_pkg}/fluxon.pc.in ${fx_gen}/fluxon.pc @ONLY)
foreach(f systemd/fluxon-master.service systemd/fluxon-owner@.service
          config/master.yaml.example config/owner.yaml.example)
  configure_file(${fx_pkg}/${f}.in ${fx_gen}/${f} @ONLY)
endforeach()

# Installed, the CLI finds libfluxon from <prefix>/bin (and fluxon-master,
# fluxon-owner beside itself: src/cli/proc.c); the daemons link no shared library of ours.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_BINDIR}")
  set_target_properties(fluxon-cli PROPERTIES INSTALL_RPATH "${CMAKE_INSTALL_FULL_LIBDIR}")
else()
  file(RELATIVE_PATH fx_rel /p/${CMAKE_INSTALL_BINDIR} /p/${CMAKE_INSTALL_LIBDIR})
  set_target_properties(fluxon-cli PROPERTIES INSTALL_RPATH "\$ORIGIN/${fx_rel}")
endif()
install(TARGETS fluxon-cli fluxon-master fluxon-owner RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS fluxon LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/fluxon DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(FILES ${fx_gen}/fluxon.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
install(FILES ${fx_gen}/systemd/fluxon-master.service ${fx_gen}/systemd/fluxon-owner@.service
        DESTINATION ${FX_SYSTEMD_UNIT_DIR})
install(FILES ${fx_gen}/config/master.yaml.example ${fx_gen}/config/owner.yaml.example
        DESTINATION ${fx_confdir})
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})

add_custom_target(fx_installables)
add_dependencies(fx_installables fluxon fluxon-cli fluxon-master fluxon-owner)

if(TARGET fluxon_py)
  # Debian's interpreter reads /usr/lib/python3/dist-packages and
  # /usr/local/lib/python3.X/dist-packages (its site.py).
  if(FX_PYTHON_INSTALL_DIR)
    set(fx_pydir "${FX_PYTHON_INSTALL_DIR}")
  elseif(CMAKE_INSTALL_PREFIX MATCHES "^/usr/?$")
    set(fx_pydir "lib/python3/dist-packages")
  else()
    set(fx_pydir "lib/python${Python3_VERSION_MAJOR}.${Python3_VERSION_MINOR}/dist-packages")
  endif()
  # The extension finds the installed libfluxon relative to itself (a pip
  # install bundles it beside the extension: setup.py).
  if(FX_PYTHON_RPATH)
    set(fx_py_rpath "${FX_PYTHON_RPATH}")
  elseif(IS_ABSOLUTE "${fx_pydir}" OR IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
    set(fx_py_rpath "${CMAKE_INSTALL_FULL_LIBDIR}")
  else()
    file(RELATIVE_PATH fx_rel /p/${fx_pydir}/fluxon /p/${CMAKE_INSTALL_LIBDIR})
    set(fx_py_rpath "\$ORIGIN/${fx_rel}")
  endif()
  set_target_properties(fluxon_py PROPERTIES INSTALL_RPATH "${fx_py_rpath}")
  install(TARGETS fluxon_py LIBRARY DESTINATION ${fx_pydir}/fluxon)
  # The package's .py files, globbed when installing (subpackages included), so
  # that files added since the configure go too; each lands in the manifest.
  if(IS_ABSOLUTE "${fx_pydir}")
    set(fx_pydest "${fx_pydir}")
  else()
    set(fx_pydest "\${CMAKE_INSTALL_PREFIX}/${fx_pydir}")
  endif()
  install(CODE "
    file(GLOB_RECURSE fx_py RELATIVE \"${CMAKE_SOURCE_DIR}/python\"
         \"${CMAKE_SOURCE_DIR}/python/fluxon/*.py\")
    list(SORT fx_py)
    foreach(rel IN LISTS fx_py)
      get_filename_component(reldir \"\${rel}\" DIRECTORY)
      file(INSTALL \"${CMAKE_SOURCE_DIR}/python/\${rel}\" DESTINATION \"${fx_pydest}/\${reldir}\")
    endforeach()")
  add_dependencies(fx_installables fluxon_py)
endif()

add_custom_target(uninstall
  COMMAND ${CMAKE_COMMAND} -DMANIFEST=${CMAKE_BINARY_DIR}/install_manifest.txt
          -P ${fx_pkg}/uninstall.cmake)
