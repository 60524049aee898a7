/* backend.c - the thin dispatch layer over a backend's vtable. */
#include "backend/backend.h"

enc_status backend_buffer_alloc(backend *be, size_t size, const char *what, backend_buffer **out)
{
    return be->iface->buffer_alloc(be, size, what, out);
}

enc_status backend_buffer_from_host(backend *be, const void *data, size_t size, const char *what,
                                    backend_buffer **out)
{
    if (be->iface->buffer_from_host) return be->iface->buffer_from_host(be, data, size, what, out);
    ENC_TRY(be->iface->buffer_alloc(be, size, what, out));
    enc_status s = be->iface->buffer_write(be, *out, 0, data, size);
    if (s != ENC_OK) {
        be->iface->buffer_free(be, *out);
        *out = NULL;
    }
    return s;
}

void backend_buffer_free(backend *be, backend_buffer *buf)
{
    if (buf) be->iface->buffer_free(be, buf);
}

enc_status backend_buffer_write(backend *be, backend_buffer *buf, size_t offset, const void *src,
                                size_t size)
{
    return be->iface->buffer_write(be, buf, offset, src, size);
}

enc_status backend_buffer_read(backend *be, backend_buffer *buf, size_t offset, void *dst,
                               size_t size)
{
    return be->iface->buffer_read(be, buf, offset, dst, size);
}

enc_status backend_graph_compute(backend *be, const graph *g)
{
    return be->iface->graph_compute(be, g);
}

void backend_destroy(backend *be)
{
    if (be) be->iface->destroy(be);
}
