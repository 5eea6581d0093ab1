#include <gst/gst.h>
#include <gst/app/gstappsrc.h>
#include <gst/audio/audio.h>
#include <gst/controller/controller.h>
#include <gst/base/gsttypefindhelper.h>
/* malloc_trim: the engine hands freed heap back after letting go of its pipeline. */
#include <malloc.h>
