/* vk_shaders.h - the compute shaders (shaders/NAME.comp) as SPIR-V embedded in
 * the binary: the build compiles each with glslc twice, plain and with
 * subgroup arithmetic (ENC_SUBGROUP), and cmake/embed_spirv.cmake writes
 * the table below into a generated C file. */
#ifndef ENC_BACKEND_VULKAN_VK_SHADERS_H
#define ENC_BACKEND_VULKAN_VK_SHADERS_H

#include <stddef.h>

typedef struct vk_shader_blob {
    const char *name;           /* the .comp file's base name ("matmul") */
    int subgroup;               /* 1: compiled with ENC_SUBGROUP */
    const unsigned char *spirv; /* 4-byte aligned */
    size_t size;                /* bytes */
} vk_shader_blob;

extern const vk_shader_blob vk_shader_blobs[];
extern const int vk_n_shader_blobs;

#endif
