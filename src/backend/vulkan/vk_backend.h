/* vk_backend.h - the Vulkan implementation of the backend interface:
 * device-local buffers, GLSL compute shaders (SPIR-V embedded at build
 * time), eager execution one submitted op at a time, and the captured step
 * as one VkCommandBuffer. Runs on any Vulkan 1.1 device, Mesa's lavapipe
 * included. */
#ifndef ENC_BACKEND_VULKAN_VK_BACKEND_H
#define ENC_BACKEND_VULKAN_VK_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "backend/backend.h"

/* Open device `index` (the order Vulkan enumerates them, as `encore devices`
 * lists them), or with index < 0 the one ENCORE_VK_DEVICE names, else the
 * best: a discrete GPU first, then integrated, virtual, then a CPU
 * implementation such as lavapipe. ENCORE_VK_VALIDATION=1 enables the
 * Khronos validation layer (when installed) and makes any message it
 * reports an error. */
enc_status vk_backend_create(int index, backend **out);

/* What `encore devices` shows of one Vulkan device. */
typedef struct vk_device_info {
    char name[256];
    const char *type;        /* "discrete", "integrated", "virtual", "cpu", "other" */
    uint64_t device_local;   /* bytes in device-local heaps */
    uint32_t api_version;    /* VK_MAKE_API_VERSION */
    bool subgroup_arith;     /* subgroup arithmetic in compute shaders */
    bool is_default;         /* the one vk_backend_create(-1) opens (ENCORE_VK_DEVICE's, if valid) */
} vk_device_info;

/* Fill up to max entries; *n is how many devices there are. Fails (with a
 * message) when no Vulkan loader or driver answers. */
enc_status vk_devices_list(vk_device_info *out, int max, int *n);

#endif
