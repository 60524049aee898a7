/* vk_pipelines.c - the compute pipelines: one per graph op, from the
 * embedded SPIR-V (the subgroup variant where the device has subgroup
 * arithmetic), made at the op's first use, one per set of specialization
 * constants a dispatch asks for (attention's unrolled trip count and
 * workgroup layout; shaders without them ignore them). An op whose weights
 * are block-quantized runs its NAME_q shader instead (matmul_q, ...), one
 * pipeline per block type (constant 5). Every pipeline shares one layout:
 * a set of VK_N_DESCRIPTORS storage buffers and VK_N_TEXELS texel-buffer
 * views, and the vk_push constants. */
#include <stdio.h>
#include <string.h>

#include "backend/vulkan/vk_impl.h"
#include "backend/vulkan/vk_shaders.h"

/* The shader file of each graph op, in graph_op order. */
static const char *const vk__shader_names[GRAPH_OP_COUNT] = {
    [GRAPH_OP_GET_ROWS] = "get_rows",   [GRAPH_OP_RMS_NORM] = "rms_norm",
    [GRAPH_OP_MATMUL] = "matmul",       [GRAPH_OP_ROPE_NEOX] = "rope_neox",
    [GRAPH_OP_SWIGLU] = "swiglu",       [GRAPH_OP_ADD] = "add",
    [GRAPH_OP_STORE_KV] = "store_kv",   [GRAPH_OP_ATTENTION] = "attention",
    [GRAPH_OP_ARGMAX] = "argmax",       [GRAPH_OP_DECODE_ADVANCE] = "decode_advance",
    [GRAPH_OP_MOE_ROUTE] = "moe_route", [GRAPH_OP_MOE_WEIGHTS] = "moe_weights",
    [GRAPH_OP_MATMUL_ID] = "matmul_id", [GRAPH_OP_MOE_SUM] = "moe_sum",
    [GRAPH_OP_SAMPLE] = "sample",
};

enc_status vk_pipelines_init(vk_ctx *c)
{
    VkFormatProperties fp;
    vkGetPhysicalDeviceFormatProperties(c->phys, VK_FORMAT_R32G32B32A32_UINT, &fp);
    if (!(fp.bufferFeatures & VK_FORMAT_FEATURE_UNIFORM_TEXEL_BUFFER_BIT))
        return enc_fail(ENC_ERR_UNSUPPORTED, "vulkan: device '%s' cannot read R32G32B32A32_UINT texel buffers "
                        "(a format every Vulkan device must support)", c->props.deviceName);
    VkDescriptorSetLayoutBinding b[] = {
        {.binding = 0, .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = VK_N_DESCRIPTORS,
         .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT},
        {.binding = VK_N_DESCRIPTORS, .descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER,
         .descriptorCount = VK_N_TEXELS, .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT},
    };
    VkDescriptorSetLayoutCreateInfo dl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .bindingCount = 2,
        .pBindings = b,
    };
    VkResult r = vkCreateDescriptorSetLayout(c->dev, &dl, NULL, &c->set_layout);
    if (r != VK_SUCCESS) return vk_fail(r, "vkCreateDescriptorSetLayout");
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = sizeof(vk_push)};
    VkPipelineLayoutCreateInfo pl = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &c->set_layout,
        .pushConstantRangeCount = 1,
        .pPushConstantRanges = &pr,
    };
    r = vkCreatePipelineLayout(c->dev, &pl, NULL, &c->pipe_layout);
    return r == VK_SUCCESS ? ENC_OK : vk_fail(r, "vkCreatePipelineLayout");
}

void vk_pipelines_free(vk_ctx *c)
{
    for (int i = 0; i < GRAPH_OP_COUNT; i++) {
        for (int k = 0; k < VK_N_SPECS; k++)
            if (c->pipelines[i][k]) vkDestroyPipeline(c->dev, c->pipelines[i][k], NULL);
        if (c->modules[i]) vkDestroyShaderModule(c->dev, c->modules[i], NULL);
        for (int q = 0; q < VK_N_QTYPES; q++)
            for (int k = 0; k < VK_N_SPECS; k++)
                if (c->qpipelines[i][q][k]) vkDestroyPipeline(c->dev, c->qpipelines[i][q][k], NULL);
        if (c->qmodules[i]) vkDestroyShaderModule(c->dev, c->qmodules[i], NULL);
    }
    if (c->pipe_layout) vkDestroyPipelineLayout(c->dev, c->pipe_layout, NULL);
    if (c->set_layout) vkDestroyDescriptorSetLayout(c->dev, c->set_layout, NULL);
}

static const vk_shader_blob *vk__blob(const char *name, int subgroup)
{
    for (int i = 0; i < vk_n_shader_blobs; i++)
        if (vk_shader_blobs[i].subgroup == subgroup && strcmp(vk_shader_blobs[i].name, name) == 0)
            return &vk_shader_blobs[i];
    return NULL;
}

/* The module of `name` in *slot, made at its first use. */
static enc_status vk__module(vk_ctx *c, const char *name, VkShaderModule *slot)
{
    if (*slot) return ENC_OK;
    const vk_shader_blob *blob = vk__blob(name, c->subgroup);
    if (!blob) return enc_fail(ENC_ERR_INTERNAL, "vulkan: no shader %s", name);
    VkShaderModuleCreateInfo mi = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = blob->size,
        .pCode = (const uint32_t *)(const void *)blob->spirv,
    };
    VkResult r = vkCreateShaderModule(c->dev, &mi, NULL, slot);
    return r == VK_SUCCESS ? ENC_OK : enc_fail_context(vk_fail(r, "vkCreateShaderModule"), "shader %s", name);
}

/* The pipeline of module m with the constants of spec and qtype in *slot. */
static enc_status vk__pipeline(vk_ctx *c, VkShaderModule m, const char *name, int spec, enc_dtype qtype,
                               VkPipeline *slot)
{
    /* shaders without these constants ignore them */
    uint32_t values[6] = {1u << (spec & 3), spec & 4 ? c->subgroup_size : 64u, spec & 4 ? VK_TRUE : VK_FALSE,
                          (uint32_t)(spec >> VK_SPEC_KV_SHIFT) & 3u, 8u << (spec & 7),
                          (uint32_t)qtype};
    VkSpecializationMapEntry entries[6];
    for (uint32_t i = 0; i < 6; i++)
        entries[i] = (VkSpecializationMapEntry){.constantID = i, .offset = i * 4, .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = 6, .pMapEntries = entries, .dataSize = sizeof values,
                               .pData = values};
    VkComputePipelineCreateInfo pci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {
            .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
            .stage = VK_SHADER_STAGE_COMPUTE_BIT,
            .module = m,
            .pName = "main",
            .pSpecializationInfo = &si,
        },
        .layout = c->pipe_layout,
    };
    VkResult r = vkCreateComputePipelines(c->dev, VK_NULL_HANDLE, 1, &pci, NULL, slot);
    if (r != VK_SUCCESS) return enc_fail_context(vk_fail(r, "vkCreateComputePipelines"), "shader %s", name);
    return vk_check_validation(c);
}

enc_status vk_pipeline_get(vk_ctx *c, graph_op op, int spec, enc_dtype qtype, VkPipeline *out)
{
    bool quant = qtype != ENC_F32;
    const char *name = (unsigned)op < GRAPH_OP_COUNT ? vk__shader_names[op] : NULL;
    if (!name || spec < 0 || spec >= VK_N_SPECS || (quant && !vk_ops_reads_quantized(op, qtype)))
        return enc_fail(ENC_ERR_INTERNAL, "vulkan: no shader for op %d (variant %d, weights %s)", (int)op, spec,
                        enc_dtype_name(qtype));
    VkPipeline *slot = quant ? &c->qpipelines[op][vk_qtype_slot(qtype)][spec] : &c->pipelines[op][spec];
    if (!*slot) {
        char qname[32];
        snprintf(qname, sizeof qname, "%s_q", name);
        VkShaderModule *m = quant ? &c->qmodules[op] : &c->modules[op];
        ENC_TRY(vk__module(c, quant ? qname : name, m));
        ENC_TRY(vk__pipeline(c, *m, quant ? qname : name, spec, qtype, slot));
    }
    *out = *slot;
    return ENC_OK;
}
