#!/bin/sh
# check-tools-includes.sh TOOLS_DIR - the encore program includes no header
# of src/ but two: the internal api/encore_tools.h and the server's
# server/server.h (CMakeLists.txt gives it src/ on its include path for
# those alone). Prints each other such include and fails.
bad=$(grep -n '^#include "[^"]*/' "$1"/*.c "$1"/*.h |
      grep -v -e '"api/encore_tools.h"' -e '"server/server.h"')
[ -z "$bad" ] && exit 0
echo "tools/ includes headers of src/ other than api/encore_tools.h and server/server.h:"
echo "$bad"
exit 1
