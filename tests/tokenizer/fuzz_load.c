/* fuzz_load.c - libFuzzer target: tokenizer_load_buffer on arbitrary bytes.
 *
 * The input is a tokenizer.json text. Whatever it holds, loading must return
 * a status (never crash, leak or read out of bounds); when it loads, the
 * tokenizer must encode and decode a fixed sample and a slice of the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_use(tokenizer *t, const char *s, size_t n)
{
    int32_t *ids;
    size_t n_ids;
    if (tokenizer_encode(t, s, n, &ids, &n_ids) != ENC_OK) return;
    char *text;
    if (tokenizer_decode(t, ids, n_ids, 1, &text) == ENC_OK) free(text);
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tokenizer *t;
    if (tokenizer_load_buffer((const char *)data, size, NULL, 0, &t) != ENC_OK) return 0;
    static const char sample[] = "Hello, world! <|im_end|> it's 12345 \xE4\xBD\xA0\xE5\xA5\xBD e\xCC\x81  \n\n";
    fuzz_use(t, sample, sizeof sample - 1);
    fuzz_use(t, (const char *)data, size < 256 ? size : 256);
    tokenizer_free(t);
    return 0;
}
