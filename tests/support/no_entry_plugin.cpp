// A shared library that is not an nn-Meter plugin: it lacks the entry point.
extern "C" int not_a_plugin(void) { return 42; }
