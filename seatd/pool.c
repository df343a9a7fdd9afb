/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/fileio.h"
#include "common/log.h"
#include "common/strprintf.h"
#include "pool-state.h"
#include "pool.h"
#include "seat-log.h"

#define POOL_IDLE_MS 5000         /* the worker looks again at least this often */
#define POOL_BACKOFF_MIN_MS 5000  /* after a failed boot ... */
#define POOL_BACKOFF_MAX_MS 120000 /* ... doubling up to this */

typedef struct Pool {
        PoolSpec spec;
        uint64_t made, claimed, replaced;
        bool filling;        /* a boot for it is under way */
        char *held;          /* why it does not fill now (a host limit), or NULL */
        char *last_error;    /* the last failed boot */
        int64_t retry_at_ms; /* no boot before (monotonic) */
        unsigned backoff_ms;
} Pool;

struct PoolManager {
        const SeatConfig *config;
        SeatManager *seats;
        ImageStore *store;
        char *path;               /* <state_dir>/pools */
        uint64_t max_memory_mib;  /* pool_max_memory_mib, or half the host's RAM */
        pthread_mutex_t lock;     /* everything below */
        pthread_cond_t cond;
        Pool *pools;
        size_t n_pools;
        bool stop, kicked;
        pthread_t worker;
        bool worker_running;
};

static void pool_done(Pool *p) {
        free(p->held);
        free(p->last_error);
}

static void set_text(char **field, const char *fmt, ...) _printf_(2, 3);
static void set_text(char **field, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *t = vstrprintf(fmt, ap);
        va_end(ap);
        free(*field);
        *field = t;
}

/* Under lock. */
static Pool *pool_find(PoolManager *p, const char *image, const char *egress) {
        for (size_t i = 0; i < p->n_pools; i++)
                if (!strcmp(p->pools[i].spec.image, image) && !strcmp(p->pools[i].spec.egress, egress))
                        return &p->pools[i];
        return NULL;
}

static void kick_locked(PoolManager *p) {
        p->kicked = true;
        pthread_cond_broadcast(&p->cond);
}

static void on_seat_event(SeatPoolEvent ev, const char *image, const char *egress, void *userdata) {
        PoolManager *p = userdata;
        pthread_mutex_lock(&p->lock);
        Pool *pool = pool_find(p, image, egress);
        if (pool && ev == SEAT_POOL_CLAIMED)
                pool->claimed++;
        if (pool && ev == SEAT_POOL_BROKEN)
                pool->replaced++;
        kick_locked(p);
        pthread_mutex_unlock(&p->lock);
}

/* ---- the saved sizes ---- */

/* Under lock: every pool with a size, written atomically. */
static int pools_save(PoolManager *p, SeatError **ret_error) {
        _cleanup_free_ PoolSpec *specs = calloc(p->n_pools + 1, sizeof(PoolSpec));
        _cleanup_free_ char *text = NULL;
        size_t n = 0, len = 0;
        if (!specs)
                return -ENOMEM;
        for (size_t i = 0; i < p->n_pools; i++)
                if (p->pools[i].spec.ready > 0)
                        specs[n++] = p->pools[i].spec;
        int r = pool_state_format(specs, n, &text, &len);
        if (r >= 0)
                r = write_file_atomic(p->path, text, len, 0600);
        if (r < 0)
                return seat_error_set(ret_error, -r, "save the pools to '%s': %s (check the state directory)", p->path,
                                      strerror(-r));
        return 0;
}

static int pools_load(PoolManager *p) {
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ PoolSpec *specs = NULL;
        size_t len = 0, n = 0;
        int r = read_file_capped(p->path, POOL_STATE_MAX, &text, &len);
        if (r == -ENOENT)
                return 0;
        if (r >= 0)
                r = pool_state_parse(text, len, &specs, &n);
        if (r < 0) {
                log_error("the saved pools in '%s' cannot be read (%s): starting without pools; 'seatctl pool set' writes the file anew",
                          p->path, strerror(-r));
                return 0;
        }
        p->pools = calloc(n + 1, sizeof(Pool));
        if (!p->pools)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                p->pools[i].spec = specs[i];
        p->n_pools = n;
        if (n > 0)
                log_notice("%zu pool(s) restored from '%s'", n, p->path);
        return 0;
}

/* ---- the worker ---- */

static void release_seat(PoolManager *p, Seat *s, const char *why) {
        _cleanup_error_ SeatError *err = NULL;
        log_seat_notice(seat_id(s), "pool: releasing seat '%s' (%s)", seat_id(s), why);
        if (seat_release(p->seats, s, NULL, &err) < 0)
                log_seat_warning(seat_id(s), "pool: releasing seat '%s': %s", seat_id(s), err ? err->message : "?");
        seat_unref(s);
}

static uint64_t image_memory_mib(PoolManager *p, const char *image, SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
        if (image_store_get(p->store, image, &man, ret_error) < 0)
                return 0;
        return man->memory_mib > 0 ? (uint64_t) man->memory_mib : 1;
}

/* Under lock: whether the host has room for one more seat of this pool; *held says why not. */
static bool room_for(PoolManager *p, Pool *pool, uint64_t need_mib) {
        unsigned seats = 0;
        uint64_t mem = 0;
        seat_manager_usage(p->seats, &seats, &mem);
        if ((long) seats + 1 > p->config->pool_max_seats) {
                set_text(&pool->held, "the host runs %u seats and pool_max_seats is %ld (seatd.conf)", seats,
                         p->config->pool_max_seats);
                return false;
        }
        if (mem + need_mib > p->max_memory_mib) {
                set_text(&pool->held,
                         "seats use %" PRIu64 " MiB of memory, one more needs %" PRIu64 " MiB and pool_max_memory_mib is %" PRIu64
                         " (seatd.conf)", mem, need_mib, p->max_memory_mib);
                return false;
        }
        pool->held = mfree(pool->held);
        return true;
}

/* Under lock, dropped around the boot. */
static void fill_one(PoolManager *p, Pool *pool) {
        _cleanup_error_ SeatError *err = NULL;
        char image[sizeof(pool->spec.image)], egress[sizeof(pool->spec.egress)];
        snprintf(image, sizeof(image), "%s", pool->spec.image);
        snprintf(egress, sizeof(egress), "%s", pool->spec.egress);
        pool->filling = true;
        pthread_mutex_unlock(&p->lock);
        int r = seat_provision_pooled(p->seats, image, egress[0] ? egress : NULL, &err);
        pthread_mutex_lock(&p->lock);
        pool = pool_find(p, image, egress); /* the array may have moved */
        if (!pool)
                return;
        pool->filling = false;
        if (r >= 0) {
                pool->made++;
                pool->last_error = mfree(pool->last_error);
                pool->backoff_ms = 0;
                return;
        }
        if (r == -EDQUOT) {
                /* Another boot (a dashboard's) took the last place since room_for() looked:
                 * held, as room_for() says it next time, not a failed boot to back off from. */
                set_text(&pool->held, "%s", err ? err->message : "the host is at pool_max_seats");
                return;
        }
        pool->backoff_ms = pool->backoff_ms ? MIN(pool->backoff_ms * 2, (unsigned) POOL_BACKOFF_MAX_MS) : POOL_BACKOFF_MIN_MS;
        pool->retry_at_ms = now_monotonic_ms() + pool->backoff_ms;
        set_text(&pool->last_error, "%s", err ? err->message : strerror(-r));
        log_warning("pool of image '%s': a seat could not be made (%s); trying again in %u s", image, pool->last_error,
                    pool->backoff_ms / 1000);
}

static unsigned count_in(const SeatPoolEntry *e, size_t n, const char *image, const char *egress) {
        unsigned c = 0;
        for (size_t i = 0; i < n; i++)
                c += !strcmp(e[i].image, image) && !strcmp(e[i].egress, egress);
        return c;
}

/* One step of work, under lock: true when something was done (look again at once). */
static bool work_once(PoolManager *p, int64_t *next_ms) {
        _cleanup_free_ SeatPoolEntry *pooled = NULL;
        size_t n = 0;

        /* Seats that failed their health check when claimed: released, so the pool replaces them. */
        Seat *broken = seat_pool_take_broken(p->seats);
        if (broken) {
                pthread_mutex_unlock(&p->lock);
                release_seat(p, broken, "it failed its health check when claimed");
                pthread_mutex_lock(&p->lock);
                return true;
        }
        if (seat_manager_pooled(p->seats, &pooled, &n) < 0)
                return false;
        /* The surplus: pools that shrank or were removed. */
        for (size_t i = 0; i < n; i++) {
                Pool *pool = pool_find(p, pooled[i].image, pooled[i].egress);
                if (pool && count_in(pooled, n, pool->spec.image, pool->spec.egress) <= (unsigned) pool->spec.ready)
                        continue;
                Seat *s = seat_pool_take(p->seats, pooled[i].image, pooled[i].egress);
                if (!s)
                        continue;
                pthread_mutex_unlock(&p->lock);
                release_seat(p, s, pool ? "its pool shrank" : "it belongs to no pool any more");
                pthread_mutex_lock(&p->lock);
                return true;
        }
        /* The pools short of seats, one boot at a time. */
        int64_t now = now_monotonic_ms();
        for (size_t i = 0; i < p->n_pools; i++) {
                Pool *pool = &p->pools[i];
                if (count_in(pooled, n, pool->spec.image, pool->spec.egress) >= (unsigned) pool->spec.ready) {
                        pool->held = mfree(pool->held);
                        continue;
                }
                if (pool->retry_at_ms > now) {
                        *next_ms = MIN(*next_ms, pool->retry_at_ms);
                        continue;
                }
                _cleanup_error_ SeatError *err = NULL;
                uint64_t need = image_memory_mib(p, pool->spec.image, &err);
                if (!need) {
                        set_text(&pool->held, "%s", err ? err->message : "its image is not in the store");
                        continue;
                }
                if (!room_for(p, pool, need))
                        continue;
                fill_one(p, pool);
                return true;
        }
        return false;
}

static void *worker(void *userdata) {
        PoolManager *p = userdata;
        pthread_mutex_lock(&p->lock);
        while (!p->stop) {
                int64_t next = now_monotonic_ms() + POOL_IDLE_MS;
                p->kicked = false;
                if (work_once(p, &next) || p->kicked || p->stop)
                        continue;
                struct timespec ts;
                clock_gettime(CLOCK_MONOTONIC, &ts);
                int64_t wait_ms = MAX(next - now_monotonic_ms(), (int64_t) 10);
                ts.tv_sec += wait_ms / 1000;
                ts.tv_nsec += (wait_ms % 1000) * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000000000L;
                }
                (void) pthread_cond_timedwait(&p->cond, &p->lock, &ts);
        }
        pthread_mutex_unlock(&p->lock);
        return NULL;
}

/* ---- the manager ---- */

static uint64_t host_memory_mib(void) {
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        return pages > 0 && size > 0 ? (uint64_t) pages * (uint64_t) size / (1024u * 1024u) : 0;
}

int pool_manager_new(const SeatConfig *config, SeatManager *seats, ImageStore *store, PoolManager **ret,
                     SeatError **ret_error) {
        _cleanup_free_ PoolManager *p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->config = config;
        p->seats = seats;
        p->store = store;
        p->max_memory_mib = config->pool_max_memory_mib > 0 ? (uint64_t) config->pool_max_memory_mib : host_memory_mib() / 2;
        if (asprintf(&p->path, "%s/pools", config->state_dir) < 0)
                return -ENOMEM;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&p->cond, &ca);
        pthread_condattr_destroy(&ca);
        int r = pools_load(p);
        if (r < 0) {
                free(p->path);
                return r;
        }
        seat_manager_set_pool_fn(seats, on_seat_event, p);
        if (pthread_create(&p->worker, NULL, worker, p) != 0) {
                seat_manager_set_pool_fn(seats, NULL, NULL);
                free(p->path);
                return seat_error_set(ret_error, EAGAIN, "cannot start the pool worker thread");
        }
        p->worker_running = true;
        *ret = TAKE_PTR(p);
        return 0;
}

PoolManager *pool_manager_free(PoolManager *p) {
        if (!p)
                return NULL;
        pthread_mutex_lock(&p->lock);
        p->stop = true;
        kick_locked(p);
        pthread_mutex_unlock(&p->lock);
        if (p->worker_running)
                pthread_join(p->worker, NULL);
        seat_manager_set_pool_fn(p->seats, NULL, NULL);
        for (size_t i = 0; i < p->n_pools; i++)
                pool_done(&p->pools[i]);
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        FREE_MANY(p->pools, p->path, p);
        return NULL;
}

/* Under lock. */
static json_object *pool_json(PoolManager *p, const Pool *pool, const SeatPoolEntry *pooled, size_t n) {
        json_object *o = json_object_new_object();
        unsigned ready = count_in(pooled, n, pool->spec.image, pool->spec.egress);
        const char *state = ready >= (unsigned) pool->spec.ready ? "full" : pool->filling ? "filling"
                            : pool->held                          ? "held"
                            : pool->last_error                    ? "retrying"
                                                                  : "filling";
        json_object_object_add(o, "image", json_object_new_string(pool->spec.image));
        json_object_object_add(o, "egress", json_object_new_string(pool->spec.egress));
        json_object_object_add(o, "size", json_object_new_int64(pool->spec.ready));
        json_object_object_add(o, "ready", json_object_new_int64(ready));
        json_object_object_add(o, "state", json_object_new_string(state));
        json_object_object_add(o, "booting", json_object_new_boolean(pool->filling));
        json_object_object_add(o, "made", json_object_new_int64((int64_t) pool->made));
        json_object_object_add(o, "claimed", json_object_new_int64((int64_t) pool->claimed));
        json_object_object_add(o, "replaced", json_object_new_int64((int64_t) pool->replaced));
        if (pool->held)
                json_object_object_add(o, "held", json_object_new_string(pool->held));
        if (pool->last_error)
                json_object_object_add(o, "last_error", json_object_new_string(pool->last_error));
        return o;
}

int pool_manager_status(PoolManager *p, json_object **ret) {
        _cleanup_free_ SeatPoolEntry *pooled = NULL;
        size_t n = 0;
        unsigned seats = 0;
        uint64_t mem = 0;
        int r = seat_manager_pooled(p->seats, &pooled, &n);
        if (r < 0)
                return r;
        seat_manager_usage(p->seats, &seats, &mem);
        json_object *o = json_object_new_object(), *arr = json_object_new_array(), *host = json_object_new_object();
        pthread_mutex_lock(&p->lock);
        for (size_t i = 0; i < p->n_pools; i++)
                json_object_array_add(arr, pool_json(p, &p->pools[i], pooled, n));
        pthread_mutex_unlock(&p->lock);
        json_object_object_add(host, "seats", json_object_new_int64(seats));
        json_object_object_add(host, "memory_mib", json_object_new_int64((int64_t) mem));
        json_object_object_add(host, "pool_max_seats", json_object_new_int64(p->config->pool_max_seats));
        json_object_object_add(host, "pool_max_memory_mib", json_object_new_int64((int64_t) p->max_memory_mib));
        json_object_object_add(o, "pools", arr);
        json_object_object_add(o, "host", host);
        *ret = o;
        return 0;
}

static int egress_check(PoolManager *p, const char *egress, SeatError **ret_error) {
        _cleanup_free_ char *path = NULL;
        struct stat st;
        if (!egress)
                return 0;
        if (!p->config->network)
                return seat_error_set(ret_error, EINVAL, "seats have no network here (network = false): leave out the egress profile");
        if (!pool_egress_name_valid(egress))
                return seat_error_set(ret_error, EINVAL, "'egress' is a profile name: 1-32 of a-z, 0-9, '_' and '-'");
        if (!strcmp(egress, "none"))
                return 0;
        if (asprintf(&path, "%s/%s.profile", p->config->egress_dir, egress) < 0)
                return -ENOMEM;
        if (stat(path, &st) < 0)
                return seat_error_set(ret_error, ENOENT, "no egress profile '%s' (%s: %m): write it first", egress, path);
        return 0;
}

int pool_manager_set(PoolManager *p, const char *image, const char *egress, int64_t ready, json_object **ret,
                     SeatError **ret_error) {
        _cleanup_(image_manifest_freep) ImageManifest *man = NULL;
        _cleanup_free_ SeatPoolEntry *pooled = NULL;
        size_t n = 0;
        if (!image_name_valid(image))
                return seat_error_set(ret_error, EINVAL, "'%s' is not an image name", image);
        if (ready < 0 || ready > POOL_READY_MAX)
                return seat_error_set(ret_error, EINVAL, "a pool holds 0..%d ready seats", POOL_READY_MAX);
        if (ready > p->config->pool_max_seats)
                return seat_error_set(ret_error, EINVAL,
                                      "a pool of %" PRId64 " seats cannot fill: pool_max_seats is %ld (raise it in seatd.conf)",
                                      ready, p->config->pool_max_seats);
        int r = egress_check(p, egress, ret_error);
        if (r < 0)
                return r;
        if (ready > 0 && (r = image_store_get(p->store, image, &man, ret_error)) < 0)
                return seat_error_wrap(ret_error, "a pool needs an imported image (seatctl image list)");
        const char *eg = seat_manager_egress_name(p->seats, egress);

        pthread_mutex_lock(&p->lock);
        Pool *pool = pool_find(p, image, eg), saved = {};
        bool added = false;
        if (!pool && ready > 0) {
                Pool *a = realloc(p->pools, (p->n_pools + 1) * sizeof(Pool));
                if (!a || p->n_pools >= POOLS_MAX) {
                        if (a)
                                p->pools = a;
                        pthread_mutex_unlock(&p->lock);
                        return seat_error_set(ret_error, a ? ENOSPC : ENOMEM, "at most %u pools", POOLS_MAX);
                }
                p->pools = a;
                pool = &p->pools[p->n_pools++];
                *pool = (Pool) {};
                snprintf(pool->spec.image, sizeof(pool->spec.image), "%s", image);
                snprintf(pool->spec.egress, sizeof(pool->spec.egress), "%s", eg);
                added = true;
        }
        if (!pool) { /* ready 0 for a pool that does not exist: nothing to do */
                pthread_mutex_unlock(&p->lock);
                json_object *o = json_object_new_object();
                json_object_object_add(o, "image", json_object_new_string(image));
                json_object_object_add(o, "egress", json_object_new_string(eg));
                json_object_object_add(o, "size", json_object_new_int64(0));
                *ret = o;
                return 0;
        }
        saved.spec = pool->spec;
        pool->spec.ready = ready;
        pool->retry_at_ms = 0; /* an operator's word: try at once */
        pool->backoff_ms = 0;
        r = pools_save(p, ret_error);
        if (r < 0) {
                if (added) {
                        pool_done(pool);
                        p->n_pools--;
                } else
                        pool->spec = saved.spec;
                pthread_mutex_unlock(&p->lock);
                return r;
        }
        log_notice("pool of image '%s' (egress '%s'): %" PRId64 " ready seats", image, eg, ready);
        json_object *o = NULL;
        if (ready == 0) {
                /* Removed: its seats are released by the worker (nothing pools them any more). */
                o = json_object_new_object();
                json_object_object_add(o, "image", json_object_new_string(image));
                json_object_object_add(o, "egress", json_object_new_string(eg));
                json_object_object_add(o, "size", json_object_new_int64(0));
                pool_done(pool);
                *pool = p->pools[--p->n_pools];
        }
        kick_locked(p);
        pthread_mutex_unlock(&p->lock);
        if (!o) {
                if ((r = seat_manager_pooled(p->seats, &pooled, &n)) < 0)
                        return r;
                pthread_mutex_lock(&p->lock);
                Pool *now = pool_find(p, image, eg);
                o = now ? pool_json(p, now, pooled, n) : json_object_new_object();
                pthread_mutex_unlock(&p->lock);
        }
        *ret = o;
        return 0;
}
