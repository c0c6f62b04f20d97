/* What Swift cannot reach of the process: prctl(2) is variadic, and memfd_create(2) and the
   file seals need _GNU_SOURCE. */
#define _GNU_SOURCE
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

int sd_process_set_dumpable(int dumpable) {
    return prctl(PR_SET_DUMPABLE, (unsigned long)dumpable, 0UL, 0UL, 0UL);
}

int sd_process_dumpable(void) {
    return prctl(PR_GET_DUMPABLE, 0UL, 0UL, 0UL, 0UL);
}

int sd_process_become_child_subreaper(void) {
    return prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL);
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
