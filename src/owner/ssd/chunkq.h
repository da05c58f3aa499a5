/*
 * chunkq.h - the producer side of the bounded chunk queue of ssd.h.
 *
 * ssd_load_into_addr_chunks() pushes each ready chunk and then the last item;
 * a consumer pops them (ssd_chunk_queue_pop in ssd.h). A full queue blocks
 * the producer: that is the pipeline's backpressure (spec 000 §5.3).
 */
#ifndef FX_SSD_CHUNKQ_H
#define FX_SSD_CHUNKQ_H

#include "owner/ssd/ssd.h"

/* Appends c, waiting while the queue is full. */
void ssd_chunk_queue_push(ssd_chunk_queue *q, ssd_chunk c);

#endif
