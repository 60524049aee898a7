/* tensor_source.c - the two tensor sources: a safetensors archive and a
 * GGUF file, adapted to the interface of tensor_source.h. */
#include "model/tensor_source.h"

#include <string.h>

static size_t ts__st_count(const void *c)
{
    return st_count(c);
}
static const st_tensor *ts__st_get(const void *c, size_t i)
{
    return st_get(c, i);
}
static const st_tensor *ts__st_find(const void *c, const char *n)
{
    return st_find(c, n);
}

static size_t ts__gguf_count(const void *c)
{
    return gguf_tensor_count(c);
}
static const st_tensor *ts__gguf_get(const void *c, size_t i)
{
    return gguf_tensor_at(c, i);
}
static const st_tensor *ts__gguf_find(const void *c, const char *n)
{
    return gguf_find_tensor(c, n);
}

/* Hugging Face's names, with the "model." prefix of a ...ForCausalLM or,
 * when only the bare embedding is there, without it (a Qwen3Model). */
static tensor_naming ts__st_naming(const st_archive *a)
{
    if (!st_find(a, "model.embed_tokens.weight") && st_find(a, "embed_tokens.weight"))
        return TENSOR_NAMES_HF_BARE;
    return TENSOR_NAMES_HF;
}

tensor_source tensor_source_safetensors(const st_archive *a)
{
    return (tensor_source){a,
                           ts__st_count,
                           ts__st_get,
                           ts__st_find,
                           ts__st_naming(a),
                           "config.json",
                           "num_hidden_layers"};
}

/* "<arch>.block_count" of the file's architecture (qwen3 or qwen3moe). */
static const char *ts__gguf_layers_key(const gguf_file *g)
{
    gguf_str a = {0};
    int found = 0;
    if (gguf_get_str(g, "general.architecture", &a, &found) == ENC_OK && found && a.len == 8 &&
        !memcmp(a.p, "qwen3moe", 8))
        return "qwen3moe.block_count";
    return "qwen3.block_count";
}

tensor_source tensor_source_gguf(const gguf_file *g)
{
    return (tensor_source){g,
                           ts__gguf_count,
                           ts__gguf_get,
                           ts__gguf_find,
                           TENSOR_NAMES_GGUF,
                           "the GGUF metadata",
                           ts__gguf_layers_key(g)};
}
