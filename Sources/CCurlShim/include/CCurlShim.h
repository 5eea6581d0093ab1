// Typed, non-variadic entry points for libcurl's variadic setters and getters,
// which Swift cannot call. One function per argument kind; nothing here owns
// memory: strings passed in are copied by libcurl (CURLOPT_* string options
// are copied since 7.17), strings returned point into the easy handle and
// live as long as it does.
#ifndef SPOOL_CCURLSHIM_H
#define SPOOL_CCURLSHIM_H

#include <curl/curl.h>

typedef size_t (*spool_curl_data_cb)(char *data, size_t size, size_t count, void *context);
typedef int (*spool_curl_xferinfo_cb)(void *context, curl_off_t dltotal, curl_off_t dlnow,
                                      curl_off_t ultotal, curl_off_t ulnow);

/// curl_easy_setopt with a long argument (flags, counts, timeouts).
static inline CURLcode spool_curl_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

/// curl_easy_setopt with a curl_off_t argument (offsets, sizes).
static inline CURLcode spool_curl_setopt_off(CURL *easy, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

/// curl_easy_setopt with a string or opaque pointer argument (URL, user data, slist).
static inline CURLcode spool_curl_setopt_pointer(CURL *easy, CURLoption option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}

/// curl_easy_setopt for CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
static inline CURLcode spool_curl_setopt_data_callback(CURL *easy, CURLoption option,
                                                        spool_curl_data_cb callback) {
    return curl_easy_setopt(easy, option, callback);
}

/// curl_easy_setopt for CURLOPT_XFERINFOFUNCTION.
static inline CURLcode spool_curl_setopt_xferinfo_callback(CURL *easy, spool_curl_xferinfo_cb callback) {
    return curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, callback);
}

/// curl_easy_getinfo for long results (response code, redirect count).
static inline CURLcode spool_curl_getinfo_long(CURL *easy, CURLINFO info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

/// curl_easy_getinfo for curl_off_t results (content length, speeds).
static inline CURLcode spool_curl_getinfo_off(CURL *easy, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}

/// curl_easy_getinfo for string results; the string is owned by the easy handle.
static inline CURLcode spool_curl_getinfo_string(CURL *easy, CURLINFO info, const char **value) {
    return curl_easy_getinfo(easy, info, value);
}

/// curl_easy_getinfo for CURLINFO_PRIVATE.
static inline CURLcode spool_curl_getinfo_pointer(CURL *easy, CURLINFO info, void **value) {
    return curl_easy_getinfo(easy, info, value);
}

/// curl_multi_setopt with a long argument.
static inline CURLMcode spool_curl_multi_setopt_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}

/// curl_share_setopt with a long argument (CURLSHOPT_SHARE / UNSHARE of a lock data kind).
static inline CURLSHcode spool_curl_share_setopt_long(CURLSH *share, CURLSHoption option, long value) {
    return curl_share_setopt(share, option, value);
}

#endif
