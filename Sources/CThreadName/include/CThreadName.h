#ifndef SIDECAR_CTHREADNAME_H
#define SIDECAR_CTHREADNAME_H
/// Names the calling thread (at most 15 bytes are kept), so `top -H` and
/// `ps -L` show what each thread is.
void sidecar_name_current_thread(const char *name);
/// Copies the calling thread's name into `buffer` (NUL-terminated; 16
/// bytes hold any name), or an empty string when it cannot be read.
void sidecar_current_thread_name(char *buffer, unsigned long size);
#endif
