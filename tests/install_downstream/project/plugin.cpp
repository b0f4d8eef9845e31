// A plugin built with the installed helper sees plugin.h; this one only has to compile and link.
#include "nnmeter/plugin.h"
