/* vk_memory.c - device buffers, their host mirrors, the staging buffer, and
 * the one-off submissions that move bytes between host and device.
 *
 * Every buffer is a device-local VkBuffer with its own allocation, zeroed at
 * creation. A buffer of up to VK_MIRROR_MAX bytes also has a host-visible,
 * mapped mirror: a write lands there and is marked pending; the next
 * submission copies pending ranges to the device first (vk_record_pending),
 * and a recording copies the step inputs it reads at their first use. A
 * larger buffer (weights, the KV cache, the step arena) is written and read
 * in chunks through the shared staging buffer, each chunk a submission. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_impl.h"

/* --- submissions ----------------------------------------------------------- */

void vk_record_barrier(VkCommandBuffer cmd)
{
    VkMemoryBarrier mb = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_HOST_BIT,
                         0, 1, &mb, 0, NULL, 0, NULL);
}

enc_status vk_cmd_begin(vk_ctx *c, VkCommandBuffer cmd)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    VkResult r = vkBeginCommandBuffer(cmd, &bi);
    if (r != VK_SUCCESS) return vk_fail(r, "vkBeginCommandBuffer");
    if (c->timestamps) {
        vkCmdResetQueryPool(cmd, c->queries, 0, 2);
        vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, c->queries, 0);
    }
    /* host writes before the submission are visible to it (vkQueueSubmit);
     * this makes the previous submission's device writes visible too */
    vk_record_barrier(cmd);
    return ENC_OK;
}

static void vk__read_timestamps(vk_ctx *c)
{
    uint64_t ts[2];
    if (vkGetQueryPoolResults(c->dev, c->queries, 0, 2, sizeof ts, ts, sizeof ts[0],
                              VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
        return;
    c->last_device_s = (double)(ts[1] - ts[0]) * (double)c->props.limits.timestampPeriod * 1e-9;
    c->total_device_s += c->last_device_s;
}

enc_status vk_submit_wait(vk_ctx *c, VkCommandBuffer cmd, bool end)
{
    VkResult r;
    if (end) {
        if (c->timestamps) vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, c->queries, 1);
        if ((r = vkEndCommandBuffer(cmd)) != VK_SUCCESS) return vk_fail(r, "vkEndCommandBuffer");
    }
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1, .pCommandBuffers = &cmd};
    if ((r = vkQueueSubmit(c->queue, 1, &si, c->fence)) != VK_SUCCESS) return vk_fail(r, "vkQueueSubmit");
    r = vkWaitForFences(c->dev, 1, &c->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(c->dev, 1, &c->fence);
    if (r != VK_SUCCESS) return vk_fail(r, "vkWaitForFences");
    c->n_submits++;
    if (c->timestamps) vk__read_timestamps(c);
    return vk_check_validation(c);
}

/* --- allocation ------------------------------------------------------------- */

static int vk__memory_type(const vk_ctx *c, uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < c->mem_props.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (c->mem_props.memoryTypes[i].propertyFlags & want) == want) return (int)i;
    return -1;
}

/* Out of memory: say what did not fit, with the numbers. */
static enc_status vk__oom(const vk_ctx *c, uint32_t heap, size_t size, const char *what, const char *why)
{
    const double mib = 1024.0 * 1024.0;
    return enc_fail(ENC_ERR_OUT_OF_MEMORY,
                    "vulkan: out of device memory: '%s' needs %zu bytes (%.1f MiB) but device '%s' "
                    "heap %u has %.1f MiB of which encore already holds %.1f MiB (%s)",
                    what, size, (double)size / mib, c->props.deviceName, heap,
                    (double)c->mem_props.memoryHeaps[heap].size / mib, (double)c->heap_used[heap] / mib, why);
}

/* The largest device-local heap (0 if none is marked so). */
static uint32_t vk__main_heap(const vk_ctx *c)
{
    uint32_t best = 0;
    for (uint32_t h = 0; h < c->mem_props.memoryHeapCount; h++)
        if ((c->mem_props.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            c->mem_props.memoryHeaps[h].size > c->mem_props.memoryHeaps[best].size)
            best = h;
    return best;
}

/* One VkBuffer with its own memory of the wanted kind. */
static enc_status vk__alloc(vk_ctx *c, size_t size, const char *what, VkMemoryPropertyFlags want, VkBuffer *buf,
                            VkDeviceMemory *mem, uint32_t *heap_out)
{
    VkBufferCreateInfo bci = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = (size + 3) / 4 * 4 + (size ? 0 : 4), /* whole words: shaders read words */
        .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT |
                 VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult r = vkCreateBuffer(c->dev, &bci, NULL, buf);
    if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
        return vk__oom(c, vk__main_heap(c), size, what, "vkCreateBuffer refused it");
    if (r != VK_SUCCESS) return enc_fail_context(vk_fail(r, "vkCreateBuffer"), "buffer '%s' of %zu bytes", what, size);
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(c->dev, *buf, &req);
    int type = vk__memory_type(c, req.memoryTypeBits, want);
    if (type < 0 && (want & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT))
        type = vk__memory_type(c, req.memoryTypeBits, 0); /* no device-local type: any will do */
    if (type < 0) {
        vkDestroyBuffer(c->dev, *buf, NULL);
        *buf = VK_NULL_HANDLE;
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: device '%s' has no suitable memory type for '%s'",
                        c->props.deviceName, what);
    }
    uint32_t heap = c->mem_props.memoryTypes[type].heapIndex;
    *heap_out = heap;
    if (c->heap_used[heap] + req.size > c->mem_props.memoryHeaps[heap].size) {
        vkDestroyBuffer(c->dev, *buf, NULL);
        *buf = VK_NULL_HANDLE;
        return vk__oom(c, heap, size, what, "more than the heap has left");
    }
    VkMemoryAllocateInfo mai = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)type,
    };
    r = vkAllocateMemory(c->dev, &mai, NULL, mem);
    if (r == VK_SUCCESS) r = vkBindBufferMemory(c->dev, *buf, *mem, 0);
    if (r != VK_SUCCESS) {
        if (*mem) vkFreeMemory(c->dev, *mem, NULL);
        vkDestroyBuffer(c->dev, *buf, NULL);
        *buf = VK_NULL_HANDLE;
        *mem = VK_NULL_HANDLE;
        return r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                   ? vk__oom(c, heap, size, what, vk_result_name(r))
                   : vk_fail(r, "vkAllocateMemory");
    }
    c->heap_used[heap] += req.size;
    return ENC_OK;
}

static void vk__release(vk_ctx *c, VkBuffer buf, VkDeviceMemory mem, uint32_t heap)
{
    if (!buf) return;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(c->dev, buf, &req);
    c->heap_used[heap] -= req.size;
    vkDestroyBuffer(c->dev, buf, NULL);
    vkFreeMemory(c->dev, mem, NULL);
}

static enc_status vk__make_mirror(vk_ctx *c, backend_buffer *b)
{
    VkMemoryPropertyFlags hv = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    ENC_TRY(vk__alloc(c, b->size, b->what, hv, &b->mirror, &b->mirror_mem, &b->mirror_heap));
    void *p;
    VkResult r = vkMapMemory(c->dev, b->mirror_mem, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) return vk_fail(r, "vkMapMemory");
    b->mirror_map = p;
    memset(p, 0, b->size);
    return ENC_OK;
}

enc_status vk_buffer_create(vk_ctx *c, size_t size, const char *what, bool host_visible, backend_buffer **out)
{
    *out = NULL;
    backend_buffer *b = calloc(1, sizeof *b);
    if (!b) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: buffer '%s'", what ? what : "?");
    snprintf(b->what, sizeof b->what, "%s", what ? what : "buffer");
    b->size = size;
    VkMemoryPropertyFlags want = host_visible
                                     ? VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
                                     : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
    enc_status s = vk__alloc(c, size, b->what, want, &b->buf, &b->mem, &b->heap);
    if (s == ENC_OK && !host_visible && size <= VK_MIRROR_MAX) s = vk__make_mirror(c, b);
    if (s != ENC_OK) {
        vk_buffer_destroy(c, b);
        return s;
    }
    *out = b;
    return ENC_OK;
}

void vk_buffer_destroy(vk_ctx *c, backend_buffer *b)
{
    if (!b) return;
    vk_pending_drop(c, b);
    for (int i = 0; i < b->n_views; i++) vkDestroyBufferView(c->dev, b->views[i].view, NULL);
    free(b->views);
    if (b->mirror_map) vkUnmapMemory(c->dev, b->mirror_mem);
    vk__release(c, b->mirror, b->mirror_mem, b->mirror_heap);
    vk__release(c, b->buf, b->mem, b->heap);
    free(b);
}

enc_status vk_buffer_view(vk_ctx *c, backend_buffer *b, VkDeviceSize start, VkDeviceSize range, VkBufferView *out)
{
    for (int i = 0; i < b->n_views; i++)
        if (b->views[i].start == start && b->views[i].range == range) {
            *out = b->views[i].view;
            return ENC_OK;
        }
    ENC_TRY(vk_grow((void **)&b->views, &b->cap_views, b->n_views, sizeof *b->views, "texel views"));
    VkBufferViewCreateInfo vi = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
        .buffer = b->buf,
        .format = VK_FORMAT_R32G32B32A32_UINT,
        .offset = start,
        .range = range,
    };
    VkResult r = vkCreateBufferView(c->dev, &vi, NULL, out);
    if (r != VK_SUCCESS)
        return enc_fail_context(vk_fail(r, "vkCreateBufferView"), "%llu bytes at %llu of buffer '%s'",
                                (unsigned long long)range, (unsigned long long)start, b->what);
    b->views[b->n_views++] = (vk_view){start, range, *out};
    return ENC_OK;
}

/* --- pending mirror ranges ---------------------------------------------------- */

enc_status vk_grow(void **items, int *cap, int n, size_t elem, const char *what)
{
    if (n < *cap) return ENC_OK;
    int want = *cap ? 2 * *cap : 16;
    void *p = realloc(*items, (size_t)want * elem);
    if (!p) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: %s (%d entries)", what, want);
    *items = p;
    *cap = want;
    return ENC_OK;
}

static enc_status vk__pending_add(vk_ctx *c, backend_buffer *b, size_t lo, size_t hi)
{
    if (b->pending) {
        b->pend_lo = lo < b->pend_lo ? lo : b->pend_lo;
        b->pend_hi = hi > b->pend_hi ? hi : b->pend_hi;
        return ENC_OK;
    }
    ENC_TRY(vk_grow((void **)&c->pending, &c->cap_pending, c->n_pending, sizeof *c->pending, "pending writes"));
    c->pending[c->n_pending++] = b;
    b->pending = true;
    b->pend_lo = lo;
    b->pend_hi = hi;
    return ENC_OK;
}

void vk_pending_drop(vk_ctx *c, backend_buffer *b)
{
    if (!b->pending) return;
    for (int i = 0; i < c->n_pending; i++)
        if (c->pending[i] == b) {
            c->pending[i] = c->pending[--c->n_pending];
            break;
        }
    b->pending = false;
}

void vk_record_pending(vk_ctx *c, VkCommandBuffer cmd)
{
    if (c->n_pending == 0) return;
    for (int i = 0; i < c->n_pending; i++) {
        backend_buffer *b = c->pending[i];
        VkBufferCopy r = {.srcOffset = b->pend_lo, .dstOffset = b->pend_lo, .size = b->pend_hi - b->pend_lo};
        vkCmdCopyBuffer(cmd, b->mirror, b->buf, 1, &r);
        b->pending = false;
    }
    c->n_pending = 0;
    vk_record_barrier(cmd);
}

/* --- host <-> device ----------------------------------------------------------- */

/* Copy size bytes between (src, src_off) and (dst, dst_off) now, with the
 * pending mirror ranges first. */
static enc_status vk__copy_now(vk_ctx *c, VkBuffer src, size_t src_off, VkBuffer dst, size_t dst_off, size_t size)
{
    ENC_TRY(vk_cmd_begin(c, c->cmd));
    vk_record_pending(c, c->cmd);
    VkBufferCopy r = {.srcOffset = src_off, .dstOffset = dst_off, .size = size};
    vkCmdCopyBuffer(c->cmd, src, dst, 1, &r);
    vk_record_barrier(c->cmd);
    return vk_submit_wait(c, c->cmd, true);
}

enc_status vk_buffer_write(vk_ctx *c, backend_buffer *b, size_t offset, const void *src, size_t size)
{
    if (size == 0) return ENC_OK;
    if (b->mirror_map) {
        memcpy(b->mirror_map + offset, src, size);
        return vk__pending_add(c, b, offset, offset + size);
    }
    for (size_t done = 0; done < size;) {
        size_t n = size - done < VK_STAGING_SIZE ? size - done : VK_STAGING_SIZE;
        memcpy(c->staging_map, (const unsigned char *)src + done, n);
        ENC_TRY(vk__copy_now(c, c->staging->buf, 0, b->buf, offset + done, n));
        done += n;
    }
    return ENC_OK;
}

void vk_record_readback(VkCommandBuffer cmd, const vk_range *r, int n)
{
    bool any = false;
    for (int i = 0; i < n; i++) {
        if (!r[i].buf->mirror) continue;
        VkBufferCopy c = {.srcOffset = r[i].offset, .dstOffset = r[i].offset, .size = r[i].size};
        vkCmdCopyBuffer(cmd, r[i].buf->buf, r[i].buf->mirror, 1, &c);
        any = true;
    }
    if (any) vk_record_barrier(cmd);
}

void vk_mark_fresh(const vk_ctx *c, const vk_range *r, int n)
{
    for (int i = 0; i < n; i++) {
        backend_buffer *b = r[i].buf;
        if (!b->mirror) continue;
        b->fresh_submit = c->n_submits;
        b->fresh_lo = r[i].offset;
        b->fresh_hi = r[i].offset + r[i].size;
    }
}

enc_status vk_buffer_read(vk_ctx *c, backend_buffer *b, size_t offset, void *dst, size_t size)
{
    if (size == 0) return ENC_OK;
    if (b->mirror_map && b->fresh_submit && b->fresh_submit == c->n_submits && offset >= b->fresh_lo &&
        offset + size <= b->fresh_hi) { /* copied back by the last submission (expect_read) */
        memcpy(dst, b->mirror_map + offset, size);
        return ENC_OK;
    }
    if (b->mirror_map) {
        /* pending writes (this buffer's too) reach the device first */
        ENC_TRY(vk__copy_now(c, b->buf, offset, b->mirror, offset, size));
        memcpy(dst, b->mirror_map + offset, size);
        return ENC_OK;
    }
    for (size_t done = 0; done < size;) {
        size_t n = size - done < VK_STAGING_SIZE ? size - done : VK_STAGING_SIZE;
        ENC_TRY(vk__copy_now(c, b->buf, offset + done, c->staging->buf, 0, n));
        memcpy((unsigned char *)dst + done, c->staging_map, n);
        done += n;
    }
    return ENC_OK;
}

enc_status vk_buffer_zero(vk_ctx *c, backend_buffer *b)
{
    ENC_TRY(vk_cmd_begin(c, c->cmd));
    vk_record_pending(c, c->cmd);
    vkCmdFillBuffer(c->cmd, b->buf, 0, VK_WHOLE_SIZE, 0);
    vk_record_barrier(c->cmd);
    return vk_submit_wait(c, c->cmd, true);
}
