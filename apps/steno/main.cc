#include <cstdio>
int main() { std::puts("steno"); return 0; }
