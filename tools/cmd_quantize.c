/* cmd_quantize.c - `encore quantize`: write a Hugging Face checkpoint as one
 * GGUF file (llama.cpp's keys and tensor names, the tokenizer included), or
 * a GGUF file in another type (as llama-quantize does).
 *
 *   encore quantize -m DIR|IN.gguf -o FILE.gguf --type
 * f32|f16|bf16|q8_0|q4_0|q4_k|q5_k|q6_k|q4_k_m|q5_k_m
 *                   [--allow-requantize]
 *
 * Block types quantize every matrix with base/quant.c's quantizers (the
 * blocks --quantize makes at load); q4_k_m and q5_k_m are llama-quantize's
 * mixes (model/gguf_mix.h); norms stay f32. Exit status: 0 when
 * the file was written, 1 when it could not be, 2 for bad arguments. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/encore_tools.h"
#include "cli.h"
#include "commands.h"

static void quantize__usage(FILE *f)
{
    fprintf(
        f, "usage: encore quantize -m DIR|IN.gguf -o FILE.gguf --type TYPE [--allow-requantize]\n\n"
           "Writes the checkpoint in DIR (config.json, safetensors, tokenizer.json) as one\n"
           "GGUF file that encore and llama.cpp load, matrices in TYPE and norms in f32; or\n"
           "IN.gguf (qwen3, qwen3moe) in TYPE, its metadata and tokenizer copied.\n\n"
           "  -m, --model PATH     Hugging Face checkpoint directory, or a GGUF file\n"
           "  -o, --output FILE    the GGUF file to write (through FILE.tmp)\n"
           "  --type TYPE          f32, f16, bf16, or a block type: q8_0, q4_0, q4_k, q5_k,\n"
           "                       q6_k; or llama-quantize's mixes q4_k_m, q5_k_m (q4_k or\n"
           "                       q5_k, with q6_k for the output matrix and for attn_v and\n"
           "                       ffn_down in some layers). Rows of the K types must be\n"
           "                       whole 256-value blocks\n"
           "  --allow-requantize   from a GGUF file, let tensors of a block type change type\n"
           "                       (dequantized, then quantized again: more error than\n"
           "                       quantizing the float weights once); without it they are\n"
           "                       refused, and those already of their new type are copied\n"
           "  -h, --help           show this help\n");
}

static void quantize__progress(void *user, double fraction)
{
    int *last = user, pct = (int)(fraction * 100.0);
    if (pct == *last) return;
    *last = pct;
    fprintf(stderr, "\rencore: converting tensors %3d%%%s", pct, pct == 100 ? "\n" : "");
    fflush(stderr);
}

int cmd_quantize(int argc, char **argv)
{
    const char *dir = NULL, *out = NULL, *type_name = NULL;
    int allow_requantize = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--allow-requantize")) {
            allow_requantize = 1;
            continue;
        }
        const char **slot = !strcmp(o, "-m") || !strcmp(o, "--model")    ? &dir
                            : !strcmp(o, "-o") || !strcmp(o, "--output") ? &out
                            : !strcmp(o, "--type")                       ? &type_name
                                                                         : NULL;
        if (!strcmp(o, "-h") || !strcmp(o, "--help")) {
            quantize__usage(stdout);
            return CLI_OK;
        }
        if (!slot) {
            cli_error("quantize", "unknown option '%s' (try --help)", o);
            return CLI_BAD_ARGS;
        }
        if (i + 1 >= argc) {
            cli_error("quantize", "%s needs a value", o);
            return CLI_BAD_ARGS;
        }
        *slot = argv[++i];
    }
    gguf_file_type type = {ENC_F32, false};
    if (!dir || !out || !type_name) {
        cli_error("quantize", "needs -m DIR|IN.gguf, -o FILE.gguf and --type (try --help)");
        return CLI_BAD_ARGS;
    }
    if (!quantize_type_parse(type_name, &type)) {
        cli_error("quantize",
                  "--type '%s' is not one of f32, f16, bf16, q8_0, q4_0, q4_k, q5_k, "
                  "q6_k, q4_k_m, q5_k_m",
                  type_name);
        return CLI_BAD_ARGS;
    }
    int last = -1;
    int tty = isatty(STDERR_FILENO);
    enc_status s =
        quantize_to_gguf(dir, out, type, allow_requantize, tty ? quantize__progress : NULL, &last);
    if (s != ENC_OK) {
        cli_error("quantize", "cannot write %s from %s: %s", out, dir, enc_last_error());
        return s == ENC_ERR_INVALID_ARGUMENT ? CLI_BAD_ARGS : CLI_FAILED; /* the type, or a flag */
    }
    fprintf(stderr, "encore: wrote %s (%s)\n", out, type_name);
    return CLI_OK;
}
