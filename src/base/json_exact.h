/* json_exact.h - a cJSON value printed compactly with every number exact.
 *
 * cJSON prints a number with 15 significant digits unless that reads back
 * within a rounding step of it, so 5.000000000000001 prints as 5, and an
 * infinity prints as null. A schema re-printed that way is another schema,
 * and a const or enum value another value. Here each number is the shortest
 * text that strtod reads back to the same double (integers of at most 2^53
 * as digits); the rest is cJSON's own compact form. */
#ifndef ENC_BASE_JSON_EXACT_H
#define ENC_BASE_JSON_EXACT_H

#include <cjson/cJSON.h>

/* The compact text of v (the caller frees it), or NULL when out of memory
 * or when v holds a number that is not finite (*bad_number, if not NULL,
 * is then 1). */
char *json_print_exact(const cJSON *v, int *bad_number);

/* The shortest text of the finite double d that strtod reads back to d
 * ("%.17g" at most), into buf[32]. */
void json_number_text(double d, char buf[32]);

#endif
