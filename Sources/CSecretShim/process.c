/* What Swift cannot reach of the process: prctl(2) is variadic, and memfd_create(2) and the
   file seals need _GNU_SOURCE. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

int sd_process_prctl(int option, unsigned long argument) {
    return prctl(option, argument, 0UL, 0UL, 0UL);
}

int sd_process_sealed_memory_file(const char *name, const void *bytes, size_t count) {
    int descriptor = memfd_create(name, MFD_ALLOW_SEALING);
    if (descriptor < 0) return -1;
    size_t written = 0;
    while (written < count) {
        ssize_t done = write(descriptor, (const char *)bytes + written, count - written);
        if (done < 0 && errno == EINTR) continue;
        if (done <= 0) goto failed;
        written += (size_t)done;
    }
    /* Owner-read only, as programs that take a password file (libpq's PGPASSFILE) demand. */
    if (fchmod(descriptor, 0400) != 0 || lseek(descriptor, 0, SEEK_SET) != 0) goto failed;
    if (fcntl(descriptor, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0) goto failed;
    return descriptor;
failed: {
    int saved = errno ? errno : EIO;
    close(descriptor);
    errno = saved;
    return -1;
}
}

int sd_process_copy_window_size(int from, int to) {
    struct winsize size;
    if (ioctl(from, TIOCGWINSZ, &size) != 0) return -1;
    return ioctl(to, TIOCSWINSZ, &size);
}

int sd_process_open_output_terminal(int like, int *replica) {
    int reader = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (reader < 0) return -1;
    char name[128];
    int side = -1;
    if (grantpt(reader) != 0 || unlockpt(reader) != 0 || ptsname_r(reader, name, sizeof name) != 0) goto failed;
    side = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (side < 0) goto failed;
    /* Output as written: the terminal the tool writes to does its own newline translation. */
    struct termios settings;
    if (tcgetattr(side, &settings) == 0) {
        settings.c_oflag &= ~(tcflag_t)OPOST;
        tcsetattr(side, TCSANOW, &settings);
    }
    sd_process_copy_window_size(like, reader);
    *replica = side;
    return reader;
failed: {
    int saved = errno ? errno : EIO;
    if (side >= 0) close(side);
    close(reader);
    errno = saved;
    return -1;
}
}
