// Linux calls Swift cannot make directly (variadic ones); the functions are in include/CLinux.h.
#include "CLinux.h"
