#ifndef SIDECAR_CTHREADNAME_H
#define SIDECAR_CTHREADNAME_H
/// Names the calling thread (at most 15 bytes are kept), so `top -H` and
/// `ps -L` show what each thread is.
void sidecar_name_current_thread(const char *name);
#endif
