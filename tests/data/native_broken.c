/* A deliberately broken source for the compile-error test. */
int main(void)
{
	return undeclared_variable;
}
