"""Kernel names an x86 object must not define: C keywords, and the functions of the C library
and C runtime a program links with.

An x86 object's kernel is a global function symbol of its own name. Linked into a C program
(`cc main.c k.o`), a kernel called `memcpy`, `free` or `exp` replaces the C library's function
for the whole program (the static linker takes the object's definition first and never pulls
libc's; ISO C 7.1.3 reserves these names for the implementation), and one called `main` is
the program's entry. A keyword cannot be declared in the C header (`kcc compile --header`).
`refusal(name)` says why such a name is refused; the x86 target refuses it before compiling.
"""

from __future__ import annotations

# ISO C11 6.4.1 and C23's additions
C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex _Generic
_Imaginary _Noreturn _Static_assert _Thread_local alignas alignof bool constexpr false
nullptr static_assert thread_local true typeof typeof_unqual
""".split())

# the C runtime's entry points, and the functions of ISO C's headers a kernel name could
# plausibly collide with (string.h, stdlib.h, stdio.h, math.h, ctype.h, time.h, setjmp.h,
# signal.h) plus the POSIX calls every libc exports (unistd.h, fcntl.h, pthread_create)
C_RUNTIME = frozenset("""
main _start _init _fini atexit at_quick_exit exit _exit _Exit quick_exit abort
memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp strcoll
strxfrm strlen strchr strrchr strstr strspn strcspn strpbrk strtok strerror strdup strndup
index rindex bcopy bzero
malloc calloc realloc free aligned_alloc posix_memalign memalign valloc
getenv setenv unsetenv putenv system qsort bsearch abs labs llabs div ldiv lldiv rand srand
random srandom atoi atol atoll atof strtol strtoll strtoul strtoull strtof strtod strtold
mblen mbtowc wctomb mbstowcs wcstombs
printf fprintf sprintf snprintf vprintf vfprintf vsprintf vsnprintf scanf fscanf sscanf
puts fputs putchar fputc putc getchar fgetc getc gets fgets ungetc fopen freopen fclose
fflush fread fwrite fseek ftell rewind feof ferror clearerr perror remove rename tmpfile
tmpnam setbuf setvbuf fileno
sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh exp exp2 expm1 log log2
log10 log1p logb ilogb pow sqrt cbrt hypot fabs floor ceil round lround llround trunc rint
lrint llrint nearbyint fmod remainder remquo fma fmin fmax fdim frexp ldexp modf scalbn
scalbln copysign nan erf erfc tgamma lgamma
sinf cosf tanf expf exp2f logf log2f powf sqrtf fabsf floorf ceilf roundf truncf fmaf fminf
fmaxf fmodf tanhf
isalnum isalpha isblank iscntrl isdigit isgraph islower isprint ispunct isspace isupper
isxdigit tolower toupper
time clock difftime mktime strftime gmtime localtime asctime ctime
setjmp longjmp signal raise
read write open close lseek dup dup2 pipe fork execv execve execvp sleep usleep getpid
kill mmap munmap mprotect brk sbrk pthread_create pthread_join
""".split())


def refusal(name: str) -> str | None:
    """Why an x86 kernel may not be called name (None: it may)."""
    if name in C_KEYWORDS:
        return ("its name is a C keyword, which the C header (--header) cannot declare; "
                "rename the kernel (KernelInfo(name=…))")
    if name in C_RUNTIME:
        return ("its name is a C library or C runtime function's: linked into a C program, "
                "the kernel's symbol would silently replace that function; rename the kernel "
                "(KernelInfo(name=…))")
    if name.startswith("__") or (name[:1] == "_" and name[1:2].isupper()):
        return ("its name is reserved for the C implementation (ISO C 7.1.3: it begins "
                "with __, or _ and an uppercase letter); rename the kernel "
                "(KernelInfo(name=…))")
    return None
