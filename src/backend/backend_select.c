/* backend_select.c - a backend from its name: "cpu", "vulkan" (the best
 * Vulkan device) or "vulkan:N" (device N as `encore devices` lists it). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "base/threadpool.h"
#ifdef ENCORE_HAVE_VULKAN
#include "backend/vulkan/vk_backend.h"
#endif

/* "vulkan" -> -1, "vulkan:N" -> N; -2 if the name is neither. */
static int backend__vulkan_index(const char *name)
{
    if (strcmp(name, "vulkan") == 0) return -1;
    if (strncmp(name, "vulkan:", 7) != 0 || !name[7]) return -2;
    char *end;
    long i = strtol(name + 7, &end, 10);
    return *end || i < 0 || i > 255 ? -2 : (int)i;
}

bool backend_name_valid(const char *device)
{
    return !device || !*device || strcmp(device, "cpu") == 0 || backend__vulkan_index(device) != -2;
}

enc_status backend_create_named(const char *device, int n_threads, backend **out)
{
    *out = NULL;
    if (!device || !*device || strcmp(device, "cpu") == 0) return cpu_backend_create(n_threads, out);
    if (!backend_name_valid(device))
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "device '%s': expected cpu, vulkan or vulkan:N", device);
#ifdef ENCORE_HAVE_VULKAN
    return vk_backend_create(backend__vulkan_index(device), out);
#else
    return enc_fail(ENC_ERR_UNSUPPORTED, "device '%s': this build has no Vulkan backend (build with "
                    "-DENCORE_VULKAN=ON; it needs libvulkan-dev and glslc)", device);
#endif
}

int backend_host_threads(const backend *be)
{
    return strcmp(be->iface->name, "cpu") == 0 ? cpu_backend_n_threads(be) : enc_cpu_count();
}

void backend_describe(const backend *be, char *out, size_t size)
{
    if (be->iface->describe)
        be->iface->describe(be, out, size);
    else
        snprintf(out, size, "%s", be->iface->name);
}
