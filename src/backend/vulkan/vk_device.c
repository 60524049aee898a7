/* vk_device.c - the Vulkan instance, the choice of a physical device, the
 * logical device and its compute queue, and the validation layer's messages.
 *
 * Choice: ENCORE_VK_DEVICE=N (or an explicit index) picks device N in the
 * order Vulkan enumerates them; otherwise the first discrete GPU, else the
 * first integrated one, else virtual, else a CPU implementation (lavapipe).
 * ENCORE_VK_VALIDATION=1 enables VK_LAYER_KHRONOS_validation when installed;
 * every warning or error it reports is printed and makes the backend's next
 * call fail (vk_check_validation). */
#if ENCORE_SANITIZE
#define _GNU_SOURCE /* dl_iterate_phdr, RTLD_NODELETE */
#include <dlfcn.h>
#include <link.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/vulkan/vk_impl.h"
#include "base/env_flag.h"
#include "base/log.h"

#define VK__VALIDATION_LAYER "VK_LAYER_KHRONOS_validation"

const char *vk_result_name(VkResult r)
{
    switch (r) {
    case VK_SUCCESS: return "VK_SUCCESS";
    case VK_ERROR_OUT_OF_HOST_MEMORY: return "VK_ERROR_OUT_OF_HOST_MEMORY";
    case VK_ERROR_OUT_OF_DEVICE_MEMORY: return "VK_ERROR_OUT_OF_DEVICE_MEMORY";
    case VK_ERROR_INITIALIZATION_FAILED: return "VK_ERROR_INITIALIZATION_FAILED";
    case VK_ERROR_DEVICE_LOST: return "VK_ERROR_DEVICE_LOST";
    case VK_ERROR_LAYER_NOT_PRESENT: return "VK_ERROR_LAYER_NOT_PRESENT";
    case VK_ERROR_EXTENSION_NOT_PRESENT: return "VK_ERROR_EXTENSION_NOT_PRESENT";
    case VK_ERROR_FEATURE_NOT_PRESENT: return "VK_ERROR_FEATURE_NOT_PRESENT";
    case VK_ERROR_INCOMPATIBLE_DRIVER: return "VK_ERROR_INCOMPATIBLE_DRIVER";
    case VK_ERROR_TOO_MANY_OBJECTS: return "VK_ERROR_TOO_MANY_OBJECTS";
    case VK_ERROR_OUT_OF_POOL_MEMORY: return "VK_ERROR_OUT_OF_POOL_MEMORY";
    case VK_TIMEOUT: return "VK_TIMEOUT";
    default: return "VkResult error";
    }
}

enc_status vk_fail(VkResult r, const char *what)
{
    enc_status s = r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY
                       ? ENC_ERR_OUT_OF_MEMORY
                       : ENC_ERR_IO;
    return enc_fail(s, "vulkan: %s failed: %s (%d)", what, vk_result_name(r), (int)r);
}

/* --- validation messages ---------------------------------------------------- */

static VKAPI_ATTR VkBool32 VKAPI_CALL vk__on_message(VkDebugUtilsMessageSeverityFlagBitsEXT sev,
                                                    VkDebugUtilsMessageTypeFlagsEXT type,
                                                    const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                    void *user)
{
    (void)type;
    vk_ctx *c = user;
    const char *msg = data && data->pMessage ? data->pMessage : "?";
    fprintf(stderr, "encore: vulkan validation %s: %s\n",
            sev >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning", msg);
    if (c->n_validation++ == 0) snprintf(c->validation_first, sizeof c->validation_first, "%s", msg);
    return VK_FALSE;
}

enc_status vk_check_validation(vk_ctx *c)
{
    if (c->n_validation == 0) return ENC_OK;
    return enc_fail(ENC_ERR_INTERNAL, "vulkan: the validation layer reported %d message(s); the first: %s",
                    c->n_validation, c->validation_first);
}

/* NAME=0 (or false, no, off): a feature that is on by default, turned off. */
static bool vk__env_off(const char *name)
{
    return !enc_env_flag(name, true);
}

static bool vk__has_layer(const char *name)
{
    uint32_t n = 0;
    if (vkEnumerateInstanceLayerProperties(&n, NULL) != VK_SUCCESS || n == 0) return false;
    VkLayerProperties *l = calloc(n, sizeof *l);
    bool found = false;
    if (l && vkEnumerateInstanceLayerProperties(&n, l) == VK_SUCCESS)
        for (uint32_t i = 0; i < n && !found; i++) found = strcmp(l[i].layerName, name) == 0;
    free(l);
    return found;
}

static void vk__messenger_info(vk_ctx *c, VkDebugUtilsMessengerCreateInfoEXT *m)
{
    memset(m, 0, sizeof *m);
    m->sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT;
    m->messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
    m->messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
    m->pfnUserCallback = vk__on_message;
    m->pUserData = c;
}

/* --- instance --------------------------------------------------------------- */

static enc_status vk__instance(vk_ctx *c, bool validate)
{
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "encore",
        .pEngineName = "encore",
        .apiVersion = VK_API_VERSION_1_1,
    };
    const char *layers[] = {VK__VALIDATION_LAYER};
    const char *exts[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
    VkDebugUtilsMessengerCreateInfoEXT m;
    vk__messenger_info(c, &m);
    VkInstanceCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = validate ? &m : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = validate ? 1 : 0,
        .ppEnabledLayerNames = layers,
        .enabledExtensionCount = validate ? 1 : 0,
        .ppEnabledExtensionNames = exts,
    };
    VkResult r = vkCreateInstance(&ci, NULL, &c->instance);
    if (r != VK_SUCCESS)
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: no usable Vulkan driver (vkCreateInstance: %s); "
                        "install a driver, e.g. mesa-vulkan-drivers for lavapipe", vk_result_name(r));
    if (!validate) return ENC_OK;
    PFN_vkCreateDebugUtilsMessengerEXT create =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(c->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create) return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: VK_EXT_debug_utils is missing");
    r = create(c->instance, &m, NULL, &c->messenger);
    return r == VK_SUCCESS ? ENC_OK : vk_fail(r, "vkCreateDebugUtilsMessengerEXT");
}

/* --- physical devices ------------------------------------------------------- */

static int vk__type_rank(VkPhysicalDeviceType t)
{
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 3;
    default: return 4;
    }
}

static const char *vk__type_name(VkPhysicalDeviceType t)
{
    static const char *names[] = {"discrete", "integrated", "virtual", "cpu", "other"};
    return names[vk__type_rank(t)];
}

#if ENCORE_SANITIZE
/* Sanitizer builds only: keep the Vulkan driver and layer libraries loaded
 * until the process exits. The loader unloads them at vkDestroyInstance,
 * and a leak inside one (Mesa's lavapipe leaks during device enumeration)
 * is then reported from "<unknown module>", which no suppression can name;
 * pinned, its frames name the library, and tests/lsan.supp suppresses
 * exactly the leaks whose stack passes through the loader or a driver. */
static int vk__pin_module(struct dl_phdr_info *info, size_t size, void *user)
{
    (void)size, (void)user;
    const char *name = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    if (name && (!strncmp(name, "/libvulkan_", 11) || !strncmp(name, "/libVkLayer_", 12)))
        dlopen(info->dlpi_name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE); /* a reference never dropped */
    return 0;
}
#endif

static enc_status vk__enumerate(VkInstance inst, VkPhysicalDevice **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    VkResult r = vkEnumeratePhysicalDevices(inst, n, NULL);
    if (r != VK_SUCCESS) return vk_fail(r, "vkEnumeratePhysicalDevices");
    if (*n == 0) return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: no Vulkan device found");
    *out = calloc(*n, sizeof **out);
    if (!*out) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: device list");
    r = vkEnumeratePhysicalDevices(inst, n, *out);
#if ENCORE_SANITIZE
    dl_iterate_phdr(vk__pin_module, NULL); /* the drivers are loaded by now */
#endif
    return r == VK_SUCCESS || r == VK_INCOMPLETE ? ENC_OK : vk_fail(r, "vkEnumeratePhysicalDevices");
}

/* The first device of the best type. */
static uint32_t vk__best(const VkPhysicalDevice *devs, uint32_t n)
{
    uint32_t best = 0;
    int best_rank = 99;
    for (uint32_t i = 0; i < n; i++) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        if (vk__type_rank(p.deviceType) < best_rank) best = i, best_rank = vk__type_rank(p.deviceType);
    }
    return best;
}

/* The subgroup variants need compute subgroups with arithmetic, of 8 to 64
 * lanes dividing a workgroup of 64 (attention.comp gives a lane at most 256 / 8
 * dimensions). */
static VkPhysicalDeviceSubgroupProperties vk__subgroup_props(VkPhysicalDevice d)
{
    VkPhysicalDeviceSubgroupProperties sg = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
    VkPhysicalDeviceProperties2 p2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = &sg};
    vkGetPhysicalDeviceProperties2(d, &p2);
    return sg;
}

static bool vk__subgroup_ok(VkPhysicalDevice d)
{
    VkPhysicalDeviceSubgroupProperties sg = vk__subgroup_props(d);
    VkSubgroupFeatureFlags need = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT;
    return (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (sg.supportedOperations & need) == need &&
           sg.subgroupSize >= 8 && sg.subgroupSize <= 64 && 64 % sg.subgroupSize == 0;
}

static uint64_t vk__device_local_bytes(VkPhysicalDevice d)
{
    VkPhysicalDeviceMemoryProperties m;
    vkGetPhysicalDeviceMemoryProperties(d, &m);
    uint64_t sum = 0;
    for (uint32_t h = 0; h < m.memoryHeapCount; h++)
        if (m.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) sum += m.memoryHeaps[h].size;
    return sum;
}

/* The index ENCORE_VK_DEVICE names, -1 if unset; a bad value is an error. */
static enc_status vk__env_index(int *index)
{
    *index = -1;
    const char *v = getenv("ENCORE_VK_DEVICE");
    if (!v || !*v) return ENC_OK;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < 0 || x > 255)
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "ENCORE_VK_DEVICE=%s: expected a device index (see `encore devices`)", v);
    *index = (int)x;
    return ENC_OK;
}

enc_status vk_devices_list(vk_device_info *out, int max, int *n)
{
    *n = 0;
    vk_ctx c;
    memset(&c, 0, sizeof c);
    ENC_TRY(vk__instance(&c, false));
    VkPhysicalDevice *devs;
    uint32_t count;
    enc_status s = vk__enumerate(c.instance, &devs, &count);
    int env = -1;
    if (s == ENC_OK && vk__env_index(&env) != ENC_OK) env = -1; /* opening it says what is wrong */
    if (s == ENC_OK) {
        uint32_t best = env >= 0 && (uint32_t)env < count ? (uint32_t)env : vk__best(devs, count);
        for (uint32_t i = 0; i < count && (int)i < max; i++) {
            VkPhysicalDeviceProperties p;
            vkGetPhysicalDeviceProperties(devs[i], &p);
            vk_device_info *d = &out[i];
            snprintf(d->name, sizeof d->name, "%s", p.deviceName);
            d->type = vk__type_name(p.deviceType);
            d->device_local = vk__device_local_bytes(devs[i]);
            d->api_version = p.apiVersion;
            d->subgroup_arith = vk__subgroup_ok(devs[i]);
            d->is_default = i == best;
        }
        *n = (int)count;
    }
    free(devs);
    vkDestroyInstance(c.instance, NULL);
    return s;
}

static enc_status vk__pick(vk_ctx *c, int index)
{
    VkPhysicalDevice *devs;
    uint32_t n;
    ENC_TRY(vk__enumerate(c->instance, &devs, &n));
    if (index < 0) {
        enc_status s = vk__env_index(&index);
        if (s != ENC_OK) {
            free(devs);
            return s;
        }
    }
    if (index >= (int)n) {
        free(devs);
        return enc_fail(ENC_ERR_INVALID_ARGUMENT, "vulkan: device %d requested but there are %u "
                        "(indices 0..%u; see `encore devices`)", index, n, n - 1);
    }
    c->phys = devs[index < 0 ? vk__best(devs, n) : (uint32_t)index];
    free(devs);
    vkGetPhysicalDeviceProperties(c->phys, &c->props);
    vkGetPhysicalDeviceMemoryProperties(c->phys, &c->mem_props);
    c->subgroup = vk__subgroup_ok(c->phys) && !vk__env_off("ENCORE_VK_SUBGROUP");
    c->subgroup_size = vk__subgroup_props(c->phys).subgroupSize;
    /* a CPU device runs a workgroup's subgroups one after another: attention
     * takes one subgroup per workgroup there (attention.comp, ONE_SG) */
    c->one_subgroup = c->subgroup && c->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU &&
                      !vk__env_off("ENCORE_VK_CPU_LAYOUT");
    /* texel views for 16-byte loads where one can see whatever a storage
     * binding can (so that the choice never depends on a step's size) */
    c->texels = (uint64_t)c->props.limits.maxTexelBufferElements * VK_TEXEL_BYTES >=
                    c->props.limits.maxStorageBufferRange &&
                !vk__env_off("ENCORE_VK_TEXELS");
    return ENC_OK;
}

/* --- logical device ---------------------------------------------------------- */

static enc_status vk__queue_family(vk_ctx *c)
{
    uint32_t n = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &n, NULL);
    VkQueueFamilyProperties *q = calloc(n ? n : 1, sizeof *q);
    if (!q) return enc_fail(ENC_ERR_OUT_OF_MEMORY, "vulkan: queue families");
    vkGetPhysicalDeviceQueueFamilyProperties(c->phys, &n, q);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++)
        if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
            c->queue_family = i;
            c->timestamps = q[i].timestampValidBits > 0;
            found = true;
        }
    free(q);
    return found ? ENC_OK : enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: device '%s' has no compute queue",
                                     c->props.deviceName);
}

static enc_status vk__logical(vk_ctx *c)
{
    ENC_TRY(vk__queue_family(c));
    float prio = 1.0f;
    VkDeviceQueueCreateInfo qci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = c->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &prio,
    };
    VkPhysicalDeviceFeatures have, want = {0};
    vkGetPhysicalDeviceFeatures(c->phys, &have);
    c->float64 = have.shaderFloat64 && !vk__env_off("ENCORE_VK_FLOAT64");
    want.shaderFloat64 = c->float64;
    VkDeviceCreateInfo dci = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &qci,
        .pEnabledFeatures = &want,
    };
    VkResult r = vkCreateDevice(c->phys, &dci, NULL, &c->dev);
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreateDevice");
    vkGetDeviceQueue(c->dev, c->queue_family, 0, &c->queue);
    VkCommandPoolCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
        .queueFamilyIndex = c->queue_family,
    };
    if ((r = vkCreateCommandPool(c->dev, &pci, NULL, &c->cmd_pool)) != VK_SUCCESS)
        return vk_fail(r, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo ai = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = c->cmd_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    if ((r = vkAllocateCommandBuffers(c->dev, &ai, &c->cmd)) != VK_SUCCESS)
        return vk_fail(r, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fci = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    if ((r = vkCreateFence(c->dev, &fci, NULL, &c->fence)) != VK_SUCCESS) return vk_fail(r, "vkCreateFence");
    if (c->timestamps) {
        VkQueryPoolCreateInfo qp = {
            .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
            .queryType = VK_QUERY_TYPE_TIMESTAMP,
            .queryCount = 2,
        };
        if (vkCreateQueryPool(c->dev, &qp, NULL, &c->queries) != VK_SUCCESS) c->timestamps = false;
    }
    return ENC_OK;
}

enc_status vk_device_open(vk_ctx *c, int index)
{
    bool validate = enc_env_flag("ENCORE_VK_VALIDATION", false);
    if (validate && !vk__has_layer(VK__VALIDATION_LAYER)) {
        enc_log_warn("ENCORE_VK_VALIDATION: %s is not installed (Debian: vulkan-validationlayers); "
                     "running without it", VK__VALIDATION_LAYER);
        validate = false;
    }
    ENC_TRY(vk__instance(c, validate));
    ENC_TRY(vk__pick(c, index));
    ENC_TRY(vk__logical(c));
    enc_log_info("vulkan: %s (%s), subgroup arithmetic %s, texel loads %s%s", c->props.deviceName,
                 vk__type_name(c->props.deviceType), c->subgroup ? "on" : "off", c->texels ? "on" : "off",
                 validate ? ", validation layer on" : "");
    return vk_check_validation(c);
}

void vk_device_close(vk_ctx *c)
{
    if (c->dev) {
        if (c->queries) vkDestroyQueryPool(c->dev, c->queries, NULL);
        if (c->fence) vkDestroyFence(c->dev, c->fence, NULL);
        if (c->cmd_pool) vkDestroyCommandPool(c->dev, c->cmd_pool, NULL);
        vkDestroyDevice(c->dev, NULL);
    }
    if (c->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            c->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(c->instance, c->messenger, NULL);
    }
    if (c->instance) vkDestroyInstance(c->instance, NULL);
}
