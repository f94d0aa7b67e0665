/* Compiles, but does not link: the compile-error test's linker case. */
void no_such_function(void);

int main(void)
{
	no_such_function();
	return 0;
}
