#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>
#include "CThreadName.h"

void sidecar_name_current_thread(const char *name)
{
    char truncated[16];
    strncpy(truncated, name, sizeof truncated - 1);
    truncated[sizeof truncated - 1] = 0;
    pthread_setname_np(pthread_self(), truncated);
}

void sidecar_current_thread_name(char *buffer, unsigned long size)
{
    if (size == 0) return;
    if (pthread_getname_np(pthread_self(), buffer, size) != 0) buffer[0] = 0;
}
