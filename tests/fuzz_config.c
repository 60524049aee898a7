/* fuzz_config.c - libFuzzer target for the config.json parser.
 *
 * Each input, NUL-terminated, is parsed with qwen3_config_parse. A config
 * that parses must satisfy the invariants the rest of encore relies on. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    qwen3_config c;
    if (qwen3_config_parse(text, "fuzz/config.json", &c) == ENC_OK) {
        if (c.hidden_size <= 0 || c.n_layers <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 ||
            c.head_dim <= 0 || c.vocab_size <= 0 || c.intermediate_size <= 0)
            abort();
        if (c.n_heads % c.n_kv_heads != 0 || c.head_dim % 2 != 0) abort();
        if (c.n_eos < 0 || c.n_eos > QWEN3_MAX_EOS) abort();
        if (!(c.rms_norm_eps > 0) || !(c.rope_theta > 0)) abort();
    }
    free(text);
    return 0;
}
