/* tensor_source.h - where a model's tensors come from, behind one small
 * interface: a safetensors checkpoint or a GGUF file, each seen as a set of
 * named, mapped tensors (count, i-th in name order, find by name), plus the
 * naming scheme its names follow and what to call it in messages. The Qwen3
 * tensor check (qwen3_tensors.c) and the upload (qwen3.c) see only this, so
 * one path serves both formats. */
#ifndef ENC_MODEL_TENSOR_SOURCE_H
#define ENC_MODEL_TENSOR_SOURCE_H

#include <stddef.h>

#include "model/gguf.h"
#include "model/safetensors.h"

typedef enum tensor_naming {
    TENSOR_NAMES_HF,      /* model.layers.L.self_attn.q_proj.weight, ... */
    TENSOR_NAMES_HF_BARE, /* the same without "model.": layers.L...., embed_tokens.weight
                           * (a Qwen3Model saved alone, as Qwen3-Embedding ships) */
    TENSOR_NAMES_GGUF,    /* llama.cpp's: blk.L.attn_q.weight, ... */
} tensor_naming;

typedef struct tensor_source {
    const void *ctx; /* the archive or the GGUF file; not owned */
    size_t (*count)(const void *ctx);
    const st_tensor *(*get)(const void *ctx, size_t i);          /* name order */
    const st_tensor *(*find)(const void *ctx, const char *name); /* NULL if absent */
    tensor_naming naming;
    const char *config_name; /* what holds the hyper-parameters, for messages */
    const char *layers_key;  /* its name for the layer count */
} tensor_source;

tensor_source tensor_source_safetensors(const st_archive *a);
tensor_source tensor_source_gguf(const gguf_file *g);

#endif
