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

bool backend_buffer_keeps_host(const backend *be) { return be->iface->buffer_from_host != NULL; }

bool backend_supports_weight_dtype(const backend *be, graph_op op, enc_dtype t)
{
    if (t == ENC_F32 || t == ENC_BF16 || t == ENC_F16) return true;
    return enc_dtype_is_quantized(t) && be->iface->supports_weight_dtype &&
           be->iface->supports_weight_dtype(be, op, t);
}

enc_status backend_buffer_free(backend *be, backend_buffer *buf)
{
    return buf ? be->iface->buffer_free(be, buf) : ENC_OK;
}

enc_status backend_buffer_repack_matrix(backend *be, backend_buffer *buf, enc_dtype dtype,
                                        int64_t n_mats, int64_t rows, int64_t k)
{
    if (!be->iface->buffer_repack_matrix) return ENC_OK;
    return be->iface->buffer_repack_matrix(be, buf, dtype, n_mats, rows, k);
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

enc_status backend_expect_read(backend *be, backend_buffer *buf, size_t offset, size_t size)
{
    return be->iface->expect_read ? be->iface->expect_read(be, buf, offset, size) : ENC_OK;
}

enc_status backend_graph_compute(backend *be, const graph *g)
{
    return be->iface->graph_compute(be, g);
}

double backend_device_seconds(const backend *be)
{
    return be->iface->device_seconds ? be->iface->device_seconds(be) : 0.0;
}

void backend_destroy(backend *be)
{
    if (be) be->iface->destroy(be);
}

bool backend_supports_capture(const backend *be)
{
    return be->iface->capture_begin && be->iface->capture_end && be->iface->replay;
}

bool backend_supports_kv_cache_dtype(const backend *be, enc_dtype dtype)
{
    unsigned mask = be->iface->kv_cache_dtypes ? be->iface->kv_cache_dtypes : 1u << ENC_F32;
    return (unsigned)dtype < ENC_DTYPE_COUNT && (mask >> dtype & 1u);
}

bool backend_supports_op(const backend *be, graph_op op)
{
    return be->iface->supports_op ? be->iface->supports_op(be, op) : (unsigned)op < GRAPH_OP_COUNT;
}

bool backend_supports_bf16_activations(const backend *be)
{
    return be->iface->supports_bf16_activations && be->iface->supports_bf16_activations(be);
}

enc_status backend_refuse_in_capture(const backend *be, bool capturing, const char *call, const char *what)
{
    if (!capturing) return ENC_OK;
    return enc_fail(ENC_ERR_CAPTURE, "%s: %s of buffer '%s' refused: the backend is capturing "
                    "(no host read, write, allocation or free inside a captured region)",
                    be->iface->name, call, what ? what : "?");
}

enc_status backend_capture_begin(backend *be)
{
    if (!backend_supports_capture(be))
        return enc_fail(ENC_ERR_UNSUPPORTED, "%s backend: capture is not supported", be->iface->name);
    return be->iface->capture_begin(be);
}

enc_status backend_capture_end(backend *be, backend_recording **out)
{
    return be->iface->capture_end(be, out);
}

enc_status backend_replay(backend *be, const backend_recording *rec)
{
    if (!rec) return enc_fail(ENC_ERR_INVALID_ARGUMENT, "%s backend: replay of no recording", be->iface->name);
    return be->iface->replay(be, rec);
}

void backend_recording_free(backend *be, backend_recording *rec)
{
    if (rec) be->iface->recording_free(be, rec);
}
