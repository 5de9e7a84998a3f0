/* member.c - the array's devices as md shows them: md/dev-NAME, md/rdN.
 *
 * The device table is a->members[]: [0, nmembers) serve the slots,
 * [nmembers, ndevs) are spares and faulty devices that lost their slot.
 * Readers take reconf_lock, so a snapshot never sees a table that a
 * reconfiguration is rearranging.  Whether a slot's device is faulty is
 * a->faulty (atomic, set by the IO path); a device without a slot keeps it
 * in its flags.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "raidfuse/log.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* reconf_lock held. */
static unsigned dev_flags(struct rf_array *a, int dev)
{
	const struct rf_member *m = &a->members[dev];
	unsigned f = m->flags;

	if (dev < a->nmembers) {
		if (rf_faulty(a) & (1ull << dev))
			f = (f | RF_DEV_FAULTY) & ~RF_DEV_IN_SYNC;
	}
	return f;
}

int rf_array_ndevs(struct rf_array *a)
{
	int n;

	pthread_mutex_lock(&a->reconf_lock);
	n = a->ndevs;
	pthread_mutex_unlock(&a->reconf_lock);
	return n;
}

int rf_array_dev_info(struct rf_array *a, int dev, struct rf_dev_info *out)
{
	const struct rf_member *m;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->reconf_lock);
	if (dev < 0 || dev >= a->ndevs) {
		ret = -ENOENT;
		goto out;
	}
	m = &a->members[dev];
	snprintf(out->name, sizeof(out->name), "%s", base_name(m->path));
	snprintf(out->path, sizeof(out->path), "%s", m->path);
	out->flags = dev_flags(a, dev);
	out->slot = dev < a->nmembers && !(out->flags & RF_DEV_MISSING) ? dev : -1;
	out->errors = atomic_load_explicit(&m->nr_errors, memory_order_relaxed);
	out->offset = m->data_offset / 512;
	out->size = a->geom.dev_sectors / 2;
	out->recovery_start = UINT64_MAX;
out:
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_array_dev_find(struct rf_array *a, const char *name)
{
	int i, ret = -ENOENT;

	pthread_mutex_lock(&a->reconf_lock);
	for (i = 0; i < a->ndevs; i++) {
		if (a->members[i].flags & RF_DEV_MISSING)
			continue;
		if (!strcmp(base_name(a->members[i].path), name)) {
			ret = i;
			break;
		}
	}
	pthread_mutex_unlock(&a->reconf_lock);
	return ret;
}

int rf_array_dev_set_state(struct rf_array *a, const char *name, const char *word)
{
	int dev = rf_array_dev_find(a, name);

	if (dev < 0)
		return dev;
	if (!strcmp(word, "faulty")) {
		if (dev >= a->nmembers)
			return -EBUSY;
		rf_member_fail(a, dev, -EIO, "md/dev-*/state \"faulty\"", 0);
		return 0;
	}
	rf_err("%s: dev-%s/state: \"%s\" is not taken yet", a->name, name, word);
	return -EOPNOTSUPP;
}

int rf_array_add_spare(struct rf_array *a, const char *path, char *err, size_t errlen)
{
	snprintf(err, errlen, "%s: adding spares is not available yet", path);
	return -EOPNOTSUPP;
}
