/* pooling_config.c - an embedding model's checkpoint, told by its
 * sentence-transformers files: modules.json is the list of the pipeline's
 * modules ({"idx", "name", "path", "type"}); a Pooling module makes the
 * checkpoint an embedding model, and its config.json (under the module's
 * path, "1_Pooling" in Qwen3-Embedding) says how tokens are pooled. encore
 * pools the last token (pooling_mode_lasttoken, Qwen3-Embedding's), so a
 * module that pools otherwise (mean, cls, ...) is refused by name rather
 * than answered with other vectors. */
#define _POSIX_C_SOURCE 200809L
#include "model/pooling_config.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "base/json_whole.h"
#include "base/mapfile.h"

static const char POOLING__MODULE[] = "sentence_transformers.models.Pooling";

/* The JSON value of file dir/name in *out, NULL when the file does not
 * exist; unreadable or malformed: an error naming it. */
static enc_status pooling__read(const char *dir, const char *name, cJSON **out)
{
    char *path = NULL, *text = NULL;
    size_t size = 0, at = 0;
    *out = NULL;
    ENC_TRY(file_path_in(dir, name, &path));
    enc_status s = file_read_if_present(path, &text, &size);
    if (s == ENC_OK && text && !(*out = json_parse_whole(text, size, &at)))
        s = enc_fail(ENC_ERR_FORMAT, "%s: not valid JSON, or more than one value (near byte %zu)",
                     path, at);
    free(text);
    free(path);
    return s;
}

/* The Pooling module's path in modules.json's list, NULL when none. */
static enc_status pooling__module_path(const cJSON *modules, const char *where, const char **path)
{
    *path = NULL;
    if (!cJSON_IsArray(modules))
        return enc_fail(ENC_ERR_FORMAT, "%s: not a JSON array of modules", where);
    int i = 0;
    for (const cJSON *m = modules->child; m; m = m->next, i++) {
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(m, "type");
        const cJSON *p = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsObject(m) || !cJSON_IsString(type))
            return enc_fail(ENC_ERR_FORMAT, "%s: module %d has no \"type\" string", where, i);
        if (strcmp(type->valuestring, POOLING__MODULE)) continue;
        if (!cJSON_IsString(p))
            return enc_fail(ENC_ERR_FORMAT, "%s: module %d (%s) has no \"path\" string", where, i,
                            POOLING__MODULE);
        *path = p->valuestring;
        return ENC_OK;
    }
    return ENC_OK;
}

/* The Pooling module's config (dir/path/config.json; absent: its default
 * would be mean pooling, so say so) must pool the last token. */
static enc_status pooling__check_mode(const char *dir, const char *path)
{
    char name[512];
    if (snprintf(name, sizeof name, "%s/config.json", path) >= (int)sizeof name ||
        strstr(path, ".."))
        return enc_fail(ENC_ERR_FORMAT,
                        "%s/modules.json: the Pooling module's path '%s' is not a "
                        "folder of the checkpoint",
                        dir, path);
    cJSON *cfg = NULL;
    ENC_TRY(pooling__read(dir, name, &cfg));
    const cJSON *last = cJSON_GetObjectItemCaseSensitive(cfg, "pooling_mode_lasttoken");
    bool ok = cJSON_IsTrue(last);
    cJSON_Delete(cfg);
    if (ok) return ENC_OK;
    return enc_fail(ENC_ERR_UNSUPPORTED,
                    "%s/%s: the checkpoint's Pooling module does not pool the last token "
                    "(pooling_mode_lasttoken is not true); encore pools the last token only",
                    dir, name);
}

enc_status pooling_config_detect(const char *model_dir, int *is_embedding)
{
    struct stat st;
    *is_embedding = 0;
    if (stat(model_dir, &st) != 0 || !S_ISDIR(st.st_mode)) return ENC_OK; /* a GGUF file */
    cJSON *modules = NULL;
    ENC_TRY(pooling__read(model_dir, "modules.json", &modules));
    if (!modules) return ENC_OK;
    const char *path = NULL;
    char *where = NULL;
    enc_status s = file_path_in(model_dir, "modules.json", &where);
    if (s == ENC_OK) s = pooling__module_path(modules, where, &path);
    if (s == ENC_OK && path) s = pooling__check_mode(model_dir, path);
    if (s == ENC_OK) *is_embedding = path != NULL;
    free(where);
    cJSON_Delete(modules);
    return s;
}
