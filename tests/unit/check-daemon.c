/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the daemon's pass (pass.c, publish.c) without a loop or a scan thread: a
 * manager from manager_alloc() over a fake cgroupfs tree in a temp dir, a scan filled by hand,
 * then pass_decide(). Checks the records per cgroup, that observe asks the kernel nothing,
 * that an enforced reclaim writes memory.reclaim and is counted, and status.json. */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "daemon-state.h"
#include "manager.h"
#include "publish.h"
#include "pass.h"
#include "promote-pass.h"
#include "records.h"
#include "regwatch.h"
#include "macro.h"
#include "thp.h"
#include "test-main.h"

static char root[64];
static struct manager *m;

static void path_of(char *buf, size_t size, const char *rel)
{
	ck_assert_int_lt(snprintf(buf, size, "%s/%s", root, rel), (int)size);
}

static void mkdirs(const char *rel)
{
	char path[PATH_MAX];

	path_of(path, sizeof(path), rel);
	for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		mkdir(path, 0755);
		*p = '/';
	}
	ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	path_of(path, sizeof(path), rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

/* A pass as the daemon runs it: the promote step planned, run (here inline), then applied
 * after decide -> act. */
static void decide(time_t now)
{
	struct promote_job *pj = promote_plan(m);

	promote_run(pj);
	pass_decide(m, now, pj);
	promote_job_free(pj);
}

static char *get(const char *rel)
{
	char path[PATH_MAX];
	char *text = NULL;

	path_of(path, sizeof(path), rel);
	ck_assert_int_ge(read_file_bounded(path, 1 << 20, &text, NULL), 0);
	return text;
}

/* A cgroup v2 leaf with 64 MiB charged and an empty memory.reclaim. */
static void fake_cgroup(const char *name)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "cg/%s", name);
	mkdirs(rel);
	snprintf(rel, sizeof(rel), "cg/%s/memory.current", name);
	put(rel, "67108864\n");
	snprintf(rel, sizeof(rel), "cg/%s/memory.stat", name);
	put(rel, "anon 67108864\nanon_thp 67108864\n");
	snprintf(rel, sizeof(rel), "cg/%s/memory.reclaim", name);
	put(rel, "");
}

/* One policy for every cgroup: mode (enforce|observe), action (reclaim|split) once 2 MiB are
 * low-util. */
static void load_policy_action(const char *mode, const char *action)
{
	char dir[PATH_MAX], text[512], err[512];

	snprintf(text, sizeof(text),
		 "{\"policies\": [{\"name\": \"t\", \"match\": {\"cgroup\": \"/*\"}, \"mode\": \"%s\", "
		 "\"trigger\": {\"min_waste\": \"2M\"}, \"action\": \"%s\"}]}\n",
		 mode, action);
	mkdirs("policies");
	put("policies/t.json", text);
	path_of(dir, sizeof(dir), "policies");
	dglue_policies_free(m->policies);
	m->policies = NULL;
	ck_assert_msg(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)) == 1, "%s", err);
}

static void load_policy(const char *mode)
{
	load_policy_action(mode, "reclaim");
}

/* A fresh scan holding the named cgroups (NULL-terminated), each with four empty THPs: 8 MiB
 * of low-util waste. */
static void set_scan(const char *const *paths)
{
	thps_scan_free(&m->scan);
	thps_scan_init(&m->scan, &m->geom);
	for (size_t i = 0; paths[i]; i++) {
		struct thps_cgroup_stats *c = thps_scan_cgroup(&m->scan, 100 + i, paths[i]);

		ck_assert_ptr_nonnull(c);
		for (int k = 0; k < 4; k++)
			thps_hist_add(&c->hist, &m->geom, 0);
		c->have_memstat = true;
		c->memory_current = 67108864;
		c->anon_thp_bytes = 8u << 20;
	}
	thps_scan_finish(&m->scan, 0);
	m->have_scan = true;
}

static uint64_t decisions_named(const char *name)
{
	for (size_t i = 0; i < m->n_decisions; i++)
		if (!strcmp(m->decisions[i].name, name))
			return m->decisions[i].value;
	return 0;
}

static void setup(void)
{
	struct thps_ctx ctx;
	struct manager_options o = { .state_dir = NULL, .interval_usec = 60000000, .exact_scan = true };
	static char state[PATH_MAX];

	snprintf(root, sizeof(root), "/tmp/check-daemon.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
	thps_ctx_init_tree(&ctx, root, "cg");
	ctx.cgroup_version = 2;
	mkdirs("cg");
	/* What the reclaim actuator snapshots around its write. */
	mkdirs("proc");
	put("proc/vmstat", "nr_free_pages 1\nthp_split_page 7\nthp_underused_split_page 3\n");
	mkdirs("sys/kernel/mm/transparent_hugepage/khugepaged");
	put("sys/kernel/mm/transparent_hugepage/shrink_underused", "1\n");
	put("sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_none", "409\n");
	path_of(state, sizeof(state), "state");
	o.state_dir = state;
	ck_assert_int_eq(manager_alloc(&ctx, &o, &m), 0);
	thps_geometry_default(&m->geom);
	thps_scan_init(&m->scan, &m->geom);
	ck_assert_int_eq(dglue_engine_new(0, &m->engine), 0);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];

	manager_free(m);
	m = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_records_follow_cgroup_dirs)
{
	const char *both[] = { "/a", "/b", NULL }, *none[] = { NULL };
	char cmd[PATH_MAX + 16];

	fake_cgroup("a");
	fake_cgroup("b");
	load_policy("observe");
	set_scan(both);
	decide(1000);
	ck_assert_uint_eq(m->recs.n, 2);
	ck_assert_ptr_nonnull(records_find(&m->recs, "/a"));
	ck_assert_ptr_nonnull(records_find(&m->recs, "/b"));
	ck_assert_uint_eq(records_find(&m->recs, "/a")->act[DGLUE_ACT_OBSERVE].count, 1);

	/* Without THPs this pass, a cgroup keeps its record (and counters) while its dir exists. */
	set_scan(none);
	decide(1001);
	ck_assert_uint_eq(m->recs.n, 2);
	ck_assert_uint_eq(records_find(&m->recs, "/a")->act[DGLUE_ACT_OBSERVE].count, 1);
	ck_assert_int_eq(records_find(&m->recs, "/b")->last_time, 1000);

	snprintf(cmd, sizeof(cmd), "rm -rf %s/cg/b", root);
	ck_assert_int_eq(system(cmd), 0);
	decide(1002);
	ck_assert_uint_eq(m->recs.n, 1);
	ck_assert_ptr_nonnull(records_find(&m->recs, "/a"));
	ck_assert_ptr_null(records_find(&m->recs, "/b"));
}
END_TEST

START_TEST(test_observe_asks_kernel_nothing)
{
	const char *one[] = { "/work", NULL };
	const struct crecord *rec;
	_cleanup_free_ char *reclaim = NULL;

	fake_cgroup("work");
	load_policy("enforce");
	m->observe_only = true; /* --dry-run, or a kernel without memory.reclaim */
	set_scan(one);
	decide(1000);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(rec->last.action, DGLUE_ACT_OBSERVE);
	ck_assert(rec->last.dry);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_OBSERVE].count, 1);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].count, 0);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_OBSERVE].bytes_given_back, 0);
	ck_assert_uint_eq(decisions_named("observe_only"), 1);
	ck_assert_str_eq(m->last_action, "");
	reclaim = get("cg/work/memory.reclaim");
	ck_assert_str_eq(reclaim, "");
}
END_TEST

START_TEST(test_enforce_reclaim_writes_and_counts)
{
	const char *one[] = { "/work", NULL };
	const struct crecord *rec;
	_cleanup_free_ char *reclaim = NULL;

	fake_cgroup("work");
	load_policy("enforce");
	set_scan(one);
	decide(1000);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(rec->last.action, DGLUE_ACT_RECLAIM);
	ck_assert(!rec->last.dry);
	ck_assert_str_eq(rec->last.rule, "min_waste");
	ck_assert_uint_eq(decisions_named("min_waste"), 1);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].count, 1);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].failures, 0);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_OBSERVE].count, 0);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].bytes_requested, 8u << 20); /* the waste of four empty THPs */
	/* What memory.reclaim got is what the record counts as requested. */
	reclaim = get("cg/work/memory.reclaim");
	ck_assert_uint_eq(strtoull(reclaim, NULL, 10), rec->act[DGLUE_ACT_RECLAIM].bytes_requested);
	ck_assert_uint_eq(rec->last_result.requested, rec->act[DGLUE_ACT_RECLAIM].bytes_requested);
	/* The fake memory.current does not move: nothing was given back. */
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].bytes_given_back, 0);
	ck_assert_str_eq(m->last_action, "reclaim /work 0.0 MiB");
}
END_TEST

/* A policy's scan_interval reaches the daemon's pass: the second pass, at once, scans the
 * cgroup but does not decide on it (rule "interval", not "cooldown"), writes nothing, and the
 * record keeps the decision that acted. A deprecated key loads with a warning naming it. */
START_TEST(test_scan_interval_spaces_decisions)
{
	const char *one[] = { "/work", NULL };
	const struct crecord *rec;
	char dir[PATH_MAX], err[512];
	_cleanup_free_ char *reclaim = NULL;

	fake_cgroup("work");
	mkdirs("policies");
	put("policies/t.json",
	    "{\"name\": \"t\", \"match\": {\"cgroup\": \"/*\"}, \"mode\": \"enforce\",\n"
	    " \"trigger\": {\"min_waste\": \"2M\"}, \"action\": \"reclaim\", \"cooldown\": \"1s\",\n"
	    " \"scan_interval\": \"1h\",\n"
	    " \"max_thps_per_sec\": 1000}\n");
	path_of(dir, sizeof(dir), "policies");
	ck_assert_int_eq(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)), 1);
	ck_assert_msg(strstr(err, "policies/t.json:4:22: max_thps_per_sec: deprecated and ignored"),
		      "no warning: '%s'", err);
	set_scan(one);
	decide(1000);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].count, 1);
	put("cg/work/memory.reclaim", "");
	set_scan(one);
	decide(1001);
	ck_assert_uint_eq(decisions_named("interval"), 1);
	ck_assert_uint_eq(decisions_named("cooldown"), 0);
	rec = records_find(&m->recs, "/work");
	ck_assert_uint_eq(rec->act[DGLUE_ACT_RECLAIM].count, 1);
	ck_assert_str_eq(rec->last.rule, "min_waste");
	reclaim = get("cg/work/memory.reclaim");
	ck_assert_str_eq(reclaim, "");
}
END_TEST

/* The keys whose effect the engine's own tests show on hand-made figures, here through the
 * daemon's pass (policy file → dglue_decide → record), each against a control that differs in
 * that key only: lowutil_cut, sizes, pressure_guard. */
START_TEST(test_policy_keys_reach_the_pass)
{
	const char *const paths[] = {"/cut0", "/cut20", "/all", "/sized", "/calm", "/pressed", NULL};
	const unsigned util[] = {60, 60, 0, 0, 0, 0}; /* 60 of 512 subpages: bucket 1 */
	char dir[PATH_MAX], err[512];
	_cleanup_free_ char *calm = NULL, *pressed = NULL;

	for (size_t i = 0; paths[i]; i++)
		fake_cgroup(paths[i] + 1);
	put("cg/calm/memory.pressure", "some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n");
	put("cg/pressed/memory.pressure", "some avg10=50.00 avg60=20.00 avg300=5.00 total=9\n"
					  "full avg10=10.00 avg60=5.00 avg300=1.00 total=3\n");
	mkdirs("policies");
	put("policies/k.json",
	    "{\"policies\": [\n"
	    "{\"name\": \"cut0\", \"match\": {\"cgroup\": \"/cut0\"}, \"trigger\": {\"min_waste\": \"2M\"}},\n"
	    "{\"name\": \"cut20\", \"match\": {\"cgroup\": \"/cut20\"}, \"trigger\": {\"min_waste\": "
	    "\"2M\"}, \"lowutil_cut\": \"20%\"},\n"
	    "{\"name\": \"all\", \"match\": {\"cgroup\": \"/all\"}, \"trigger\": {\"min_waste\": \"2M\"}, "
	    "\"action\": \"split\"},\n"
	    "{\"name\": \"sized\", \"match\": {\"cgroup\": \"/sized\"}, \"trigger\": {\"min_waste\": "
	    "\"2M\"}, \"action\": \"split\", \"sizes\": [\"64K\"]},\n"
	    "{\"name\": \"calm\", \"match\": {\"cgroup\": \"/calm\"}, \"mode\": \"enforce\", \"trigger\": "
	    "{\"min_waste\": \"2M\"}, \"action\": \"reclaim\",\n"
	    " \"pressure_guard\": {\"memory_some_avg10\": 10}},\n"
	    "{\"name\": \"pressed\", \"match\": {\"cgroup\": \"/pressed\"}, \"mode\": \"enforce\", "
	    "\"trigger\": {\"min_waste\": \"2M\"}, \"action\": \"reclaim\",\n"
	    " \"pressure_guard\": {\"memory_some_avg10\": 10}}\n"
	    "]}\n");
	path_of(dir, sizeof(dir), "policies");
	ck_assert_int_eq(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)), 6);
	thps_scan_free(&m->scan);
	thps_scan_init(&m->scan, &m->geom);
	for (size_t i = 0; paths[i]; i++) {
		struct thps_cgroup_stats *c = thps_scan_cgroup(&m->scan, 100 + i, paths[i]);

		ck_assert_ptr_nonnull(c);
		for (int k = 0; k < 4; k++)
			thps_hist_add(&c->hist, &m->geom, util[i]);
		c->have_memstat = true;
		c->memory_current = 67108864;
		c->anon_thp_bytes = 8u << 20;
	}
	thps_scan_finish(&m->scan, 0);
	m->have_scan = true;
	decide(1000);
	/* lowutil_cut: THPs 60/512 used are low-util at "20%" (bucket 1), not at the default 0 */
	ck_assert_str_eq(records_find(&m->recs, "/cut0")->last.rule, "no_trigger");
	ck_assert_str_eq(records_find(&m->recs, "/cut20")->last.rule, "observe");
	ck_assert_uint_eq(records_find(&m->recs, "/cut20")->last.waste_bytes, 4u * 452 * 4096);
	/* sizes: a split policy of 64K folios counts none of the 2M THPs */
	ck_assert_str_eq(records_find(&m->recs, "/all")->last.rule, "observe");
	ck_assert_str_eq(records_find(&m->recs, "/sized")->last.rule, "no_trigger");
	ck_assert_uint_eq(records_find(&m->recs, "/sized")->last.waste_bytes, 0);
	/* pressure_guard: memory.pressure some avg10 50 % > 10 % skips; 0 % acts */
	ck_assert_str_eq(records_find(&m->recs, "/calm")->last.rule, "min_waste");
	ck_assert_str_eq(records_find(&m->recs, "/pressed")->last.rule, "pressure_skip");
	calm = get("cg/calm/memory.reclaim");
	pressed = get("cg/pressed/memory.reclaim");
	ck_assert_uint_eq(strtoull(calm, NULL, 10), 8u << 20);
	ck_assert_str_eq(pressed, "");
}
END_TEST

/* match.container and name through the pass: the OCI hook's registration of a cgroup carries
 * the container's name (matched against match.container globs where it opted in) or a policy's
 * name (which selects it outright); a cgroup without one gets the built-in observer. */
START_TEST(test_registrations_select_policies)
{
	const char *paths[] = {"/web", "/named", "/plain", NULL};
	char dir[PATH_MAX], err[512];

	for (size_t i = 0; paths[i]; i++)
		fake_cgroup(paths[i] + 1);
	mkdirs("policies");
	put("policies/r.json",
	    "{\"policies\": [\n"
	    "{\"name\": \"webs\", \"match\": {\"container\": \"web-*\"}, \"trigger\": {\"min_waste\": "
	    "\"2M\"}},\n"
	    "{\"name\": \"chosen\", \"match\": {\"container\": \"*\"}, \"trigger\": {\"min_waste\": "
	    "\"4M\"}}\n"
	    "]}\n");
	path_of(dir, sizeof(dir), "policies");
	ck_assert_int_eq(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)), 2);
	m->regs.items = calloc(3, sizeof(*m->regs.items));
	ck_assert_ptr_nonnull(m->regs.items);
	m->regs.n = 3;
	snprintf(m->regs.items[0].id, sizeof(m->regs.items[0].id), "web-1");
	snprintf(m->regs.items[0].cgroup, sizeof(m->regs.items[0].cgroup), "/web");
	snprintf(m->regs.items[0].mode, sizeof(m->regs.items[0].mode), "observe");
	/* registered without an io.thpshrink.* annotation (as NRI registers every container):
	 * no container glob holds for it */
	snprintf(m->regs.items[2].id, sizeof(m->regs.items[2].id), "web-2");
	snprintf(m->regs.items[2].cgroup, sizeof(m->regs.items[2].cgroup), "/plain");
	snprintf(m->regs.items[1].id, sizeof(m->regs.items[1].id), "db");
	snprintf(m->regs.items[1].cgroup, sizeof(m->regs.items[1].cgroup), "/named");
	snprintf(m->regs.items[1].policy, sizeof(m->regs.items[1].policy), "chosen");
	set_scan(paths);
	decide(1000);
	ck_assert_str_eq(records_find(&m->recs, "/web")->last.policy, "webs");
	ck_assert_str_eq(records_find(&m->recs, "/web")->last.rule, "observe");
	ck_assert_str_eq(records_find(&m->recs, "/named")->last.policy, "chosen");
	ck_assert_str_eq(records_find(&m->recs, "/named")->last.rule, "observe");
	ck_assert_str_eq(records_find(&m->recs, "/plain")->last.policy, "(builtin)");
	ck_assert_str_eq(records_find(&m->recs, "/plain")->last.rule, "no_trigger");
}
END_TEST

/* Ranges khugepaged rebuilt THPS_RECOLLAPSE_PIN_AFTER times are never split again: they must not
 * fire a split either (the k73 CI run asked for 20 splits that found nothing to split). */
static void pin_ranges(struct crecord *rec, unsigned n)
{
	rec->split.v = calloc(n, sizeof(*rec->split.v));
	ck_assert_ptr_nonnull(rec->split.v);
	for (unsigned k = 0; k < n; k++)
		rec->split.v[k] = (struct thps_split_mark){
		    .pid = getpid(), .pid_starttime = 1, .start = (uint64_t)(k + 1) << 21,
		    .pfn = k + 1, .returns = THPS_RECOLLAPSE_PIN_AFTER};
	rec->split.n = n;
}

static void scan_with_ranges(const char *const *paths)
{
	set_scan(paths);
	for (unsigned k = 0; k < 4; k++) {
		const struct thps_thp_range r = {.pid = getpid(), .pid_starttime = 1,
						 .start = (uint64_t)(k + 1) << 21, .pfn = k + 1,
						 .ino = 100};

		ck_assert_int_eq(thps_scan_add_range(&m->scan, &r), 0);
	}
}

START_TEST(test_pinned_ranges_fire_no_split)
{
	const char *one[] = { "/work", NULL };
	struct crecord *rec;

	fake_cgroup("work");
	/* Two of four pinned: the waste is the other two's. */
	load_policy_action("observe", "split");
	scan_with_ranges(one);
	rec = records_get(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	pin_ranges(rec, 2);
	decide(1000);
	ck_assert_str_eq(rec->last.rule, "observe");
	ck_assert_uint_eq(rec->last.lowutil_thps, 2);
	ck_assert_uint_eq(rec->last.waste_bytes, 2u << 21);

	/* All four pinned: an enforce split policy sees no waste, so nothing fires or fails. */
	load_policy_action("enforce", "split");
	thps_recollapse_clear(&rec->split);
	pin_ranges(rec, 4);
	decide(1001);
	ck_assert_str_eq(rec->last.rule, "no_trigger");
	ck_assert_int_eq(rec->last.action, DGLUE_ACT_NONE);
	ck_assert_uint_eq(rec->act[DGLUE_ACT_SPLIT].count, 0);
	ck_assert_uint_eq(decisions_named("failed"), 0);

	/* A reclaim policy is not about splits: the pinned ranges are waste to it. */
	load_policy_action("observe", "reclaim");
	decide(1002);
	ck_assert_uint_eq(rec->last.waste_bytes, 4u << 21);
}
END_TEST

/* No exact split here: a split_or_reclaim decision becomes memory.reclaim and says why; a plain
 * split stays a split (dglue_act refuses it, memory.reclaim untouched). */
START_TEST(test_decision_fit_no_mechanism)
{
	struct dglue_decision d = {.action = DGLUE_ACT_SPLIT, .allow_reclaim = true, .act = true};

	snprintf(d.reason, sizeof(d.reason), "split 8.0 MiB: x");
	dglue_decision_fit(&d, THPS_SPLIT_MECH_PMADVISE, 1);
	ck_assert_int_eq(d.action, DGLUE_ACT_SPLIT);
	ck_assert_int_eq(d.split_mech, THPS_SPLIT_MECH_PMADVISE);
	dglue_decision_fit(&d, THPS_SPLIT_MECH_NONE, 1);
	ck_assert_int_eq(d.action, DGLUE_ACT_RECLAIM);
	ck_assert_str_eq(d.reason,
			 "split 8.0 MiB: x; no exact split here: memory.reclaim, as the policy allows");
	d.action = DGLUE_ACT_SPLIT;
	d.allow_reclaim = false;
	dglue_decision_fit(&d, THPS_SPLIT_MECH_NONE, 1);
	ck_assert_int_eq(d.action, DGLUE_ACT_SPLIT);
}
END_TEST

START_TEST(test_status_json_one_cgroup)
{
	const char *one[] = { "/work", NULL };
	_cleanup_free_ char *text = NULL;
	const struct crecord *rec;
	json_object *root_j, *arr, *e, *v;

	fake_cgroup("work");
	load_policy("enforce");
	set_scan(one);
	decide(1234);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert_int_eq(publish(m), 0);
	text = get("state/status.json");
	root_j = json_tokener_parse(text);
	ck_assert_ptr_nonnull(root_j);
	ck_assert(json_object_object_get_ex(root_j, "dry_run", &v));
	ck_assert(!json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(root_j, "cgroups", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), 1);
	e = json_object_array_get_idx(arr, 0);
	ck_assert(json_object_object_get_ex(e, "cgroup", &v));
	ck_assert_str_eq(json_object_get_string(v), "/work");
	ck_assert(json_object_object_get_ex(e, "inode", &v));
	ck_assert_int_eq(json_object_get_int64(v), 100);
	ck_assert(json_object_object_get_ex(e, "policy", &v));
	ck_assert_str_eq(json_object_get_string(v), "t");
	ck_assert(json_object_object_get_ex(e, "rule", &v));
	ck_assert_str_eq(json_object_get_string(v), "min_waste");
	ck_assert(json_object_object_get_ex(e, "action", &v));
	ck_assert_str_eq(json_object_get_string(v), "reclaim");
	ck_assert(json_object_object_get_ex(e, "time", &v));
	ck_assert_int_eq(json_object_get_int64(v), 1234);
	ck_assert(json_object_object_get_ex(e, "requested_bytes", &v));
	ck_assert_int_eq(json_object_get_int64(v), (int64_t)rec->last_result.requested);
	ck_assert(json_object_object_get_ex(e, "thps", &v));
	ck_assert_int_eq(json_object_get_int64(v), 4);
	ck_assert(json_object_object_get_ex(e, "lowutil_thps", &v));
	ck_assert_int_eq(json_object_get_int64(v), 4);
	ck_assert(json_object_object_get_ex(e, "waste_bytes", &v));
	ck_assert_int_eq(json_object_get_int64(v), 8 << 20);
	ck_assert(json_object_object_get_ex(e, "recollapsed_thps", &v));
	ck_assert_int_eq(json_object_get_int64(v), 0);
	json_object_put(root_j);
}
END_TEST

/* A node laid out as kubelet lays it out: systemd and cgroupfs drivers, the three QoS classes,
 * containerd and CRI-O ids, a pod's own cgroup, a conmon cgroup and look-alikes. Guaranteed pods
 * are observed and BestEffort ones enforced by qos_class policies: only BestEffort cgroups get a
 * memory.reclaim write; /metrics names pod, container and class; status.json carries them. */
#define KU "0f6e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b"
#define KU_ "0f6e2a4c_1b3d_4e5f_8a9b_0c1d2e3f4a5b"
#define KC "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define KD "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
START_TEST(test_kubelet_tree_qos_policies)
{
	static const struct {
		const char *path, *qos, *id; /* qos NULL: not a pod's cgroup */
	} t[] = {
	    {"/kubepods.slice/kubepods-pod" KU_ ".slice/cri-containerd-" KC ".scope", "guaranteed",
	     KC},
	    {"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" KU_
	     ".slice/crio-" KD ".scope",
	     "burstable", KD},
	    {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" KU_
	     ".slice/cri-containerd-" KC ".scope",
	     "besteffort", KC},
	    {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" KU_
	     ".slice/crio-conmon-" KD ".scope",
	     "besteffort", ""},
	    {"/kubepods/pod" KU "/" KD, "guaranteed", KD},
	    {"/kubepods/burstable/pod" KU "/" KC, "burstable", KC},
	    {"/kubepods/besteffort/pod" KU "/crio-" KD, "besteffort", KD},
	    {"/kubepods/besteffort/pod" KU, "besteffort", ""},
	    /* look-alikes: a delegated subtree, a malformed UID, an upper-case id */
	    {"/user.slice/user-1000.slice/user@1000.service/kubepods.slice/kubepods-besteffort.slice/"
	     "kubepods-besteffort-pod" KU_ ".slice",
	     NULL, NULL},
	    {"/kubepods/besteffort/pod" KU "x/" KC, NULL, NULL},
	    {"/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" KU_
	     ".slice/cri-containerd-0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"
	     ".scope",
	     "besteffort", ""},
	};
	const char *paths[ELEMENTSOF(t) + 1] = {};
	char dir[PATH_MAX], err[512], textfile[PATH_MAX];
	_cleanup_free_ char *prom = NULL, *status = NULL;
	json_object *root_j, *arr;

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		paths[i] = t[i].path;
		fake_cgroup(t[i].path + 1);
	}
	mkdirs("policies");
	put("policies/k8s.json",
	    "{\"policies\": [\n"
	    " {\"name\": \"gu\", \"match\": {\"qos_class\": \"guaranteed\"}, \"mode\": \"observe\",\n"
	    "  \"trigger\": {\"min_waste\": \"2M\"}},\n"
	    " {\"name\": \"be\", \"match\": {\"qos_class\": \"besteffort\"}, \"mode\": \"enforce\",\n"
	    "  \"trigger\": {\"min_waste\": \"2M\"}, \"action\": \"reclaim\"}]}\n");
	path_of(dir, sizeof(dir), "policies");
	ck_assert_msg(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)) == 2, "%s", err);
	path_of(textfile, sizeof(textfile), "metrics.prom");
	m->o.textfile = textfile;
	set_scan(paths);
	decide(1000);
	ck_assert_int_eq(publish(m), 0);
	prom = get("metrics.prom");
	status = get("state/status.json");

	for (size_t i = 0; i < ELEMENTSOF(t); i++) {
		const struct crecord *rec = records_find(&m->recs, t[i].path);
		bool be = t[i].qos && !strcmp(t[i].qos, "besteffort");
		_cleanup_free_ char *reclaim = NULL;
		char rel[PATH_MAX], want[2048];

		ck_assert_msg(rec, "no record for %s", t[i].path);
		ck_assert_msg(!strcmp(rec->last.policy,
				      !t[i].qos			       ? "(builtin)"
				      : !strcmp(t[i].qos, "guaranteed") ? "gu"
				      : be				       ? "be"
									       : "(builtin)"),
			      "%s: policy %s", t[i].path, rec->last.policy);
		snprintf(rel, sizeof(rel), "cg%s/memory.reclaim", t[i].path);
		reclaim = get(rel);
		ck_assert_msg(be == (*reclaim != '\0'), "%s: memory.reclaim '%s'", t[i].path,
			      reclaim);
		ck_assert_int_eq(rec->act[DGLUE_ACT_RECLAIM].count, be ? 1 : 0);

		snprintf(want, sizeof(want), "\nthpshrink_cgroup_info{cgroup=\"%s\",inode=\"%zu\"",
			 t[i].path, 100 + i);
		if (!t[i].qos) {
			ck_assert_msg(!strstr(prom, want), "info series for %s", t[i].path);
			continue;
		}
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
			 ",pod_namespace=\"\",pod_name=\"\",container_name=\"\",pod_uid=\"" KU
			 "\",container_id=\"%s\",qos_class=\"%s\"} 1\n",
			 t[i].id,
			 t[i].qos);
		ck_assert_msg(strstr(prom, want), "no %s in\n%s", want, prom);
	}
	/* status.json: the identity with each decision, none for look-alikes */
	root_j = json_tokener_parse(status);
	ck_assert_ptr_nonnull(root_j);
	ck_assert(json_object_object_get_ex(root_j, "cgroups", &arr));
	ck_assert_uint_eq(json_object_array_length(arr), ELEMENTSOF(t));
	for (size_t k = 0; k < json_object_array_length(arr); k++) {
		json_object *e = json_object_array_get_idx(arr, k), *v, *k8s;
		size_t i = 0;

		ck_assert(json_object_object_get_ex(e, "cgroup", &v));
		while (i < ELEMENTSOF(t) && strcmp(t[i].path, json_object_get_string(v)))
			i++;
		ck_assert_uint_lt(i, ELEMENTSOF(t));
		if (!t[i].qos) {
			ck_assert(!json_object_object_get_ex(e, "kubernetes", NULL));
			continue;
		}
		ck_assert(json_object_object_get_ex(e, "kubernetes", &k8s));
		ck_assert(json_object_object_get_ex(k8s, "pod_uid", &v));
		ck_assert_str_eq(json_object_get_string(v), KU);
		ck_assert(json_object_object_get_ex(k8s, "qos_class", &v));
		ck_assert_str_eq(json_object_get_string(v), t[i].qos);
		ck_assert(json_object_object_get_ex(k8s, "container_id", &v));
		if (*t[i].id)
			ck_assert_str_eq(json_object_get_string(v), t[i].id);
		else
			ck_assert_ptr_null(v);
	}
	json_object_put(root_j);
}
END_TEST

/* The promote step on a fake /proc: process 4242 in /work with one dense 2 MiB range (pagemap
 * a regular file: the pagemap finder). An observing promote policy finds it, collapses nothing,
 * and says so in status.json; PR_SET_THP_DISABLE makes the process not asked at all. */
/* VmFlags of the fake process's VMA beyond the usual ones (" nh": MADV_NOHUGEPAGE). */
static const char *fake_vmflags = "";

static void fake_dense_process(const char *thp_enabled)
{
	char smaps[256];
	char path[PATH_MAX], status[64];
	uint64_t e[512];
	FILE *f;

	mkdirs("proc/4242");
	put("proc/4242/cgroup", "0::/work\n");
	put("proc/4242/stat", "4242 (w) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n");
	snprintf(status, sizeof(status), "Name:\tw\nTHP_enabled:\t%s\n", thp_enabled);
	put("proc/4242/status", status);
	put("proc/4242/maps", "40000000-40200000 rw-p 00000000 00:00 0 \n");
	/* promote reads smaps for a process with dense ranges (opt-outs, LazyFree) */
	snprintf(smaps, sizeof(smaps),
		 "40000000-40200000 rw-p 00000000 00:00 0 \nLazyFree: 0 kB\n"
		 "THPeligible: 1\nVmFlags: rd wr mr mw me ac%s\n",
		 fake_vmflags);
	put("proc/4242/smaps", smaps);
	for (unsigned i = 0; i < 512; i++)
		e[i] = (UINT64_C(1) << 63) | (UINT64_C(1) << 56) | (5000 + 3 * i);
	path_of(path, sizeof(path), "proc/4242/pagemap");
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0x40000000 / 4096 * 8, SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(e, sizeof(e), 1, f), 1);
	ck_assert_int_eq(fclose(f), 0);
}

static void load_promote_policy(const char *mode)
{
	char dir[PATH_MAX], text[512], err[512];

	snprintf(text, sizeof(text),
		 "{\"name\": \"p\", \"match\": {\"cgroup\": \"/*\"}, \"mode\": \"%s\", "
		 "\"promote\": {\"max_bytes_per_pass\": \"64M\"}}\n",
		 mode);
	mkdirs("policies");
	put("policies/p.json", text);
	path_of(dir, sizeof(dir), "policies");
	dglue_policies_free(m->policies);
	m->policies = NULL;
	ck_assert_msg(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)) == 1, "%s", err);
}

START_TEST(test_promote_observe_finds_only)
{
	const char *none[] = { NULL };
	const struct crecord *rec;
	_cleanup_free_ char *text = NULL;

	fake_cgroup("work");
	fake_dense_process("1");
	load_promote_policy("observe");
	set_scan(none); /* under THP=never: no THP, the promote step still looks */
	decide(1000);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert(rec->prom.looked);
	ck_assert_uint_eq(rec->prom.pass_found, 1);
	ck_assert_uint_eq(rec->prom.pass_collapsed, 0);
	ck_assert_uint_eq(rec->prom.ranges, 0);
	ck_assert_uint_eq(rec->prom.opportunity_bytes, 2u << 20);
	ck_assert_msg(strstr(rec->prom.why, "policy 'p' observes: 2097152 dense bytes found"),
		      "why: %s", rec->prom.why);
	ck_assert_int_eq(publish(m), 0);
	text = get("state/status.json");
	ck_assert_ptr_nonnull(strstr(text, "\"opportunity_bytes\":2097152"));
}
END_TEST

START_TEST(test_promote_thp_disabled_not_asked)
{
	const char *none[] = { NULL };
	const struct crecord *rec;
	_cleanup_free_ char *text = NULL;

	fake_cgroup("work");
	fake_dense_process("0");
	load_promote_policy("enforce");
	set_scan(none);
	decide(1000);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert_uint_eq(rec->prom.pass_found, 0);
	ck_assert_uint_eq(rec->prom.pass_not_asked, 1);
	ck_assert_uint_eq(m->promote_failures[THPS_PROMOTE_FAIL_DISABLED], 1);
	ck_assert_int_eq(publish(m), 0);
	text = get("state/status.json");
	{
		json_object *root_j = json_tokener_parse(text), *arr, *e, *p, *f, *v;

		ck_assert_ptr_nonnull(root_j);
		ck_assert(json_object_object_get_ex(root_j, "cgroups", &arr));
		e = json_object_array_get_idx(arr, 0);
		ck_assert(json_object_object_get_ex(e, "promote", &p));
		ck_assert(json_object_object_get_ex(p, "pass_failures", &f));
		ck_assert(json_object_object_get_ex(f, "thp_disabled", &v));
		ck_assert_int_eq(json_object_get_int64(v), 1);
		ck_assert_int_eq(json_object_object_length(f), 1);
		ck_assert(json_object_object_get_ex(p, "pass_held_back", &v));
		ck_assert_int_eq(json_object_get_int64(v), 0);
		json_object_put(root_j);
	}
	/* remembered: the next pass does not even look */
	decide(1001);
	ck_assert_uint_eq(m->promote_failures[THPS_PROMOTE_FAIL_DISABLED], 1);
	ck_assert_uint_eq(records_find(&m->recs, "/work")->prom.pass_not_asked, 1);
	ck_assert_msg(strstr(records_find(&m->recs, "/work")->prom.why, "1 processes not asked"), "why: %s",
		      records_find(&m->recs, "/work")->prom.why);
}
END_TEST

START_TEST(test_promote_nohugepage_opted_out)
{
	const char *none[] = { NULL };
	const struct crecord *rec;

	fake_vmflags = " nh";
	fake_cgroup("work");
	fake_dense_process("1");
	fake_vmflags = "";
	load_promote_policy("enforce");
	set_scan(none);
	decide(1000);
	rec = records_find(&m->recs, "/work");
	ck_assert_ptr_nonnull(rec);
	ck_assert_uint_eq(rec->prom.pass_found, 0);
	ck_assert_uint_eq(rec->prom.pass_collapsed, 0);
	ck_assert_uint_eq(rec->prom.pass_opted_out, 1);
	ck_assert_uint_eq(m->promote_failures[THPS_PROMOTE_FAIL_OPTED_OUT], 1);
	ck_assert_msg(strstr(rec->prom.why, "1 ranges opted out (MADV_NOHUGEPAGE"), "why: %s",
		      rec->prom.why);
}
END_TEST

/* A fake process pid in cgroup cg whose maps has file_lines file mappings, then anon VMAs of
 * one 2 MiB window each (apart: none merge); the last one dense. */
static uint64_t fake_vma_addr(unsigned i)
{
	return 0x40000000 + (uint64_t)i * (4 << 20);
}

static void fake_process_vmas(int pid, const char *cg, unsigned file_lines, unsigned anon)
{
	char rel[64], text[256], path[PATH_MAX];
	uint64_t e[512], last = fake_vma_addr(anon - 1);
	FILE *f;

	snprintf(rel, sizeof(rel), "proc/%d", pid);
	mkdirs(rel);
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", pid);
	snprintf(text, sizeof(text), "0::/%s\n", cg);
	put(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/stat", pid);
	snprintf(text, sizeof(text), "%d (w) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 777 0 0\n", pid);
	put(rel, text);
	snprintf(rel, sizeof(rel), "proc/%d/status", pid);
	put(rel, "Name:\tw\nTHP_enabled:\t1\n");
	snprintf(rel, sizeof(rel), "proc/%d/maps", pid);
	path_of(path, sizeof(path), rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (unsigned i = 0; i < file_lines; i++)
		fprintf(f, "%llx-%llx r--p 00000000 08:01 42 /usr/lib/x.so\n",
			0x10000000ULL + i * 0x1000ULL, 0x10001000ULL + i * 0x1000ULL);
	for (unsigned i = 0; i < anon; i++)
		fprintf(f, "%" PRIx64 "-%" PRIx64 " rw-p 00000000 00:00 0 \n", fake_vma_addr(i),
			fake_vma_addr(i) + (2 << 20));
	ck_assert_int_eq(fclose(f), 0);
	/* smaps is read up to the last candidate: the dense VMA's entry is enough */
	snprintf(rel, sizeof(rel), "proc/%d/smaps", pid);
	snprintf(text, sizeof(text),
		 "%" PRIx64 "-%" PRIx64 " rw-p 00000000 00:00 0 \nLazyFree: 0 kB\n"
		 "THPeligible: 1\nVmFlags: rd wr mr mw me ac\n",
		 last, last + (2 << 20));
	put(rel, text);
	for (unsigned i = 0; i < 512; i++)
		e[i] = (UINT64_C(1) << 63) | (UINT64_C(1) << 56) | (5000 + 3 * i);
	snprintf(rel, sizeof(rel), "proc/%d/pagemap", pid);
	path_of(path, sizeof(path), rel);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseeko(f, (off_t)(last / 4096 * 8), SEEK_SET), 0);
	ck_assert_uint_eq(fwrite(e, sizeof(e), 1, f), 1);
	ck_assert_int_eq(fclose(f), 0);
}

static int64_t status_promote(const char *key, const char *sub)
{
	_cleanup_free_ char *text = NULL;
	json_object *root_j, *p, *v;
	int64_t r;

	ck_assert_int_eq(publish(m), 0);
	text = get("state/status.json");
	root_j = json_tokener_parse(text);
	ck_assert_ptr_nonnull(root_j);
	ck_assert(json_object_object_get_ex(root_j, "promote", &p));
	ck_assert_msg(json_object_object_get_ex(p, key, &v), "no promote.%s", key);
	if (sub)
		ck_assert(json_object_object_get_ex(v, sub, &v));
	r = json_object_get_int64(v);
	json_object_put(root_j);
	return r;
}

/* A process with 20,000 VMAs, its one dense range in the last: each pass looks at as many as
 * the per-process bounds allow (a fake pagemap: the pagemap finder confirms one window per
 * VMA), resumes where the last stopped, and finds it once the walks reach the end. */
START_TEST(test_promote_process_bound_resumes)
{
	const char *none[] = { NULL };
	const unsigned per = MIN(PROMOTE_PROCESS_VMAS_MAX, PROMOTE_PROCESS_WINDOWS_MAX);
	const unsigned want_passes = (20000 + per - 1) / per;
	unsigned pass;

	fake_cgroup("work");
	fake_process_vmas(4242, "work", 0, 20000);
	load_promote_policy("observe");
	set_scan(none);
	for (pass = 0; pass < want_passes + 2; pass++) {
		bool last = pass + 1 == want_passes;

		decide(1000 + pass);
		ck_assert_uint_eq(records_find(&m->recs, "/work")->prom.pass_found, last);
		ck_assert_int_le(status_promote("vmas", NULL), PROMOTE_PROCESS_VMAS_MAX);
		ck_assert_int_le(status_promote("windows", NULL), PROMOTE_PROCESS_WINDOWS_MAX);
		ck_assert_int_eq(status_promote("deferred", "process"), !last);
		ck_assert_uint_eq(m->n_promote_resume, !last);
		if (last)
			break;
	}
	ck_assert_uint_eq(pass + 1, want_passes);
	ck_assert_uint_eq(m->promote_deferred[PROMOTE_DEFERRED_PROCESS], want_passes - 1);
	ck_assert_uint_eq(m->promote_deferred[PROMOTE_DEFERRED_PASS], 0);
	/* and the next pass starts over from the beginning */
	decide(2000);
	ck_assert_int_eq(status_promote("deferred", "process"), 1);
}
END_TEST

/* Processes pid0, pid0 + 1, pid0 + 2, one in each of the cgroups cgs (fake ones), with
 * file_lines maps lines and vmas[i] VMAs each; an observing promote policy for all. */
static void three_processes(int pid0, const char *const *cgs, const unsigned *vmas,
			    unsigned file_lines)
{
	const char *none[] = { NULL };

	for (unsigned i = 0; i < 3; i++) {
		fake_cgroup(cgs[i] + 1);
		fake_process_vmas(pid0 + (int)i, cgs[i] + 1, file_lines, vmas[i]);
	}
	load_promote_policy("observe");
	set_scan(none);
}

/* The dense ranges each of the three cgroups found in the last pass. */
static void found_by_cgroup(unsigned pass, const char *const *cgs, const unsigned *want)
{
	for (unsigned i = 0; i < 3; i++)
		ck_assert_msg(records_find(&m->recs, cgs[i])->prom.pass_found == want[i],
			      "pass %u: %s found %" PRIu64, pass, cgs[i],
			      records_find(&m->recs, cgs[i])->prom.pass_found);
}

/* Three processes of 40,000 maps lines each: the step stops once it has read the pass's
 * 65,536 lines, and the next pass begins with the process this one did not reach. */
START_TEST(test_promote_pass_bound_rotates)
{
	const char *cgs[] = {"/w1", "/w2", "/w3"};
	/* reached, by pass: 5001 5002 | 5003 5001 | 5002 5003 */
	const unsigned want[3][3] = {{1, 1, 0}, {1, 0, 1}, {0, 1, 1}};
	const pid_t want_cursor[] = {5003, 5002, 5001};
	const unsigned vmas[] = {1, 1, 1}, file_lines = 40000;

	three_processes(5001, cgs, vmas, file_lines);
	for (unsigned pass = 0; pass < 3; pass++) {
		decide(1000 + pass);
		found_by_cgroup(pass, cgs, want[pass]);
		ck_assert_int_eq(m->promote_cursor, want_cursor[pass]);
		ck_assert_int_eq(status_promote("deferred", "pass"), 1);
		ck_assert_int_eq(status_promote("processes", NULL), 2);
	}
	ck_assert_uint_eq(m->promote_deferred[PROMOTE_DEFERRED_PASS], 3);
}
END_TEST

/* The step's window bound (2,048 a pass) between processes of 1,500, 1,500 and 1 windows (a
 * fake pagemap: one confirmed a VMA), the dense one last in each: the second process's walk
 * is cut by what the step has left, and it goes first at the next pass, resumed. */
START_TEST(test_promote_pass_windows_remainder)
{
	const char *cgs[] = {"/c1", "/c2", "/c3"};
	const unsigned vmas[] = {1500, 1500, 1};
	const unsigned want[2][3] = {{1, 0, 0}, {0, 1, 1}};
	const pid_t want_cursor[] = {6002, 6001};
	const unsigned file_lines = 0;

	ck_assert_uint_eq(PROMOTE_PASS_WINDOWS_MAX, 2048); /* the figures below assume it */
	three_processes(6001, cgs, vmas, file_lines);
	for (unsigned pass = 0; pass < 2; pass++) {
		decide(1000 + pass);
		found_by_cgroup(pass, cgs, want[pass]);
		ck_assert_int_eq(m->promote_cursor, want_cursor[pass]);
		ck_assert_int_eq(status_promote("windows", NULL), PROMOTE_PASS_WINDOWS_MAX);
	}
	/* pass 1: 6002 cut after 548 windows, 6003 not reached; pass 2: 6001 cut after 1,095 */
	ck_assert_uint_eq(m->promote_deferred[PROMOTE_DEFERRED_PASS], 1);
	ck_assert_uint_eq(m->promote_deferred[PROMOTE_DEFERRED_PROCESS], 2);
}
END_TEST

/* The tenant boundary through the daemon's pass: the split and the promote paths ask one rule
 * (dglue_choose). Registrations: /e names "enf" and asks observe (not delegated: enforced),
 * its child /e/escape is /e's; /d asks observe under "deleg" (delegated: observed); /o names
 * "enf", whose match excludes it (refused, said in the reason), and asks enforce under "obs". */
static void reg_add(const char *id, const char *cgroup, const char *policy, const char *mode)
{
	struct thps_registration *r;

	m->regs.items = reallocarray(m->regs.items, m->regs.n + 1, sizeof(*m->regs.items));
	ck_assert_ptr_nonnull(m->regs.items);
	r = &m->regs.items[m->regs.n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->cgroup, sizeof(r->cgroup), "%s", cgroup);
	snprintf(r->policy, sizeof(r->policy), "%s", policy);
	snprintf(r->mode, sizeof(r->mode), "%s", mode);
}

START_TEST(test_tenant_one_rule)
{
	const char *paths[] = { "/e", "/e/escape", "/d", "/o", NULL };
	const struct { const char *path, *policy; bool writes, enforce; } want[] = {
		{ "/e", "enf", true, true },
		{ "/e/escape", "enf", true, true },
		{ "/d", "deleg", false, false },
		{ "/o", "obs", false, false },
	};
	char dir[PATH_MAX], err[512];

	for (size_t i = 0; paths[i]; i++)
		fake_cgroup(paths[i] + 1);
	mkdirs("policies");
	put("policies/t.json",
	    "{\"policies\": [\n"
	    " {\"name\": \"enf\", \"match\": {\"cgroup\": \"/e*\"}, \"mode\": \"enforce\",\n"
	    "  \"trigger\": {\"min_waste\": \"2M\"}, \"action\": \"reclaim\",\n"
	    "  \"promote\": {\"max_bytes_per_pass\": \"4M\"}},\n"
	    " {\"name\": \"deleg\", \"match\": {\"cgroup\": \"/d\"}, \"mode\": \"enforce\",\n"
	    "  \"tenant_mode\": \"observe\", \"trigger\": {\"min_waste\": \"2M\"},\n"
	    "  \"action\": \"reclaim\", \"promote\": {\"max_bytes_per_pass\": \"4M\"}},\n"
	    " {\"name\": \"obs\", \"match\": {\"cgroup\": \"/o\"}, \"mode\": \"observe\",\n"
	    "  \"trigger\": {\"min_waste\": \"2M\"}, \"action\": \"reclaim\",\n"
	    "  \"promote\": {\"max_bytes_per_pass\": \"4M\"}}]}\n");
	path_of(dir, sizeof(dir), "policies");
	ck_assert_msg(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)) == 3, "%s", err);
	reg_add("ce", "/e", "enf", "observe");
	reg_add("cd", "/d", "", "observe");
	reg_add("co", "/o", "enf", "enforce");
	set_scan(paths);
	decide(1000);
	for (size_t i = 0; i < ELEMENTSOF(want); i++) {
		const struct crecord *rec = records_find(&m->recs, want[i].path);
		struct dglue_promote_plan plan;
		_cleanup_free_ char *reclaim = NULL;
		char rel[PATH_MAX];

		ck_assert_msg(rec, "no record for %s", want[i].path);
		ck_assert_msg(!strcmp(rec->last.policy, want[i].policy), "%s: policy %s",
			      want[i].path, rec->last.policy);
		snprintf(rel, sizeof(rel), "cg%s/memory.reclaim", want[i].path);
		reclaim = get(rel);
		ck_assert_msg(!!reclaim[0] == want[i].writes, "%s: memory.reclaim '%s'",
			      want[i].path, reclaim);
		dglue_promote_plan(m->policies, want[i].path, reg_find(m, want[i].path), &plan);
		ck_assert_str_eq(plan.policy, want[i].policy);
		ck_assert_msg(plan.enforce == want[i].enforce, "%s: promote enforce %d",
			      want[i].path, plan.enforce);
	}
	ck_assert_msg(strstr(records_find(&m->recs, "/o")->last.reason,
			     "policy 'enf' named by the container's annotation not applied"),
		      "/o: %s", records_find(&m->recs, "/o")->last.reason);
	ck_assert_msg(strstr(records_find(&m->recs, "/e")->last.reason,
			     "mode 'observe' of the container's annotation not applied"),
		      "/e: %s", records_find(&m->recs, "/e")->last.reason);
}
END_TEST

/* Kubernetes identity through the pass (issue 38): registrations naming a namespace, pod,
 * container and labels select namespace and label policies; the namespace's outranks the
 * label's, and its name by annotation is refused with the reason said; status.json carries the
 * identity, /metrics the names on thpshrink_cgroup_info and thpshrink_container_info. */
START_TEST(test_identity_selects_policies)
{
	const char *paths[] = {
	    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" KU_
	    ".slice/cri-containerd-" KC ".scope",
	    "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" KU_
	    ".slice/cri-containerd-" KD ".scope",
	    NULL};
	char dir[PATH_MAX], err[512], textfile[PATH_MAX];
	_cleanup_free_ char *prom = NULL, *status = NULL;
	const struct crecord *rec;
	struct thps_registration *r;
	json_object *root_j, *arr, *e, *id, *v;

	for (size_t i = 0; paths[i]; i++)
		fake_cgroup(paths[i] + 1);
	mkdirs("policies");
	put("policies/id.json",
	    "{\"policies\": [\n"
	    "{\"name\": \"batch\", \"match\": {\"namespace\": \"batch\"}, \"mode\": \"enforce\", "
	    "\"trigger\": {\"min_waste\": \"2M\"}},\n"
	    "{\"name\": \"db\", \"match\": {\"labels\": {\"tier\": \"db\"}}, \"trigger\": "
	    "{\"min_waste\": \"2M\"}}\n"
	    "]}\n");
	path_of(dir, sizeof(dir), "policies");
	ck_assert_int_eq(dglue_policies_load(dir, false, &m->policies, err, sizeof(err)), 2);
	/* in batch, labelled tier=db, naming "db": the namespace's policy holds */
	reg_add(KC, paths[0], "db", "");
	r = &m->regs.items[m->regs.n - 1];
	snprintf(r->k8s_namespace, sizeof(r->k8s_namespace), "batch");
	snprintf(r->pod, sizeof(r->pod), "web-7d9f");
	snprintf(r->container, sizeof(r->container), "app");
	r->n_labels = 1;
	snprintf(r->labels[0].key, sizeof(r->labels[0].key), "tier");
	snprintf(r->labels[0].value, sizeof(r->labels[0].value), "db");
	/* in web, labelled tier=db: the label's */
	reg_add(KD, paths[1], "", "");
	r = &m->regs.items[m->regs.n - 1];
	snprintf(r->k8s_namespace, sizeof(r->k8s_namespace), "web");
	r->n_labels = 1;
	snprintf(r->labels[0].key, sizeof(r->labels[0].key), "tier");
	snprintf(r->labels[0].value, sizeof(r->labels[0].value), "db");
	path_of(textfile, sizeof(textfile), "metrics.prom");
	m->o.textfile = textfile;
	set_scan(paths);
	decide(1000);
	rec = records_find(&m->recs, paths[0]);
	ck_assert_str_eq(rec->last.policy, "batch");
	ck_assert_msg(strstr(rec->last.reason, "policy 'db' named by the container's annotation not "
					       "applied: it has no namespace selector, and policy "
					       "'batch' for the container's namespace does"),
		      "%s", rec->last.reason);
	ck_assert_str_eq(records_find(&m->recs, paths[1])->last.policy, "db");
	ck_assert_int_eq(publish(m), 0);
	prom = get("metrics.prom");
	ck_assert_msg(strstr(prom, "\nthpshrink_cgroup_info{cgroup=\"/kubepods.slice/kubepods-besteffort"
				   ".slice/kubepods-besteffort-pod" KU_ ".slice/cri-containerd-" KC
				   ".scope\",inode=\"100\",pod_namespace=\"batch\",pod_name=\"web-7d9f\","
				   "container_name=\"app\",pod_uid=\"" KU "\""),
		      "%s", prom);
	ck_assert(strstr(prom, "pod_namespace=\"batch\",pod_name=\"web-7d9f\",container_name=\"app\","
			       "container=\"" KC "\",policy=\"batch\"} 1\n"));
	ck_assert(strstr(prom, "pod_namespace=\"web\",pod_name=\"\",container_name=\"\",container=\"" KD
			       "\",policy=\"db\"} 1\n"));
	status = get("state/status.json");
	root_j = json_tokener_parse(status);
	ck_assert_ptr_nonnull(root_j);
	ck_assert(json_object_object_get_ex(root_j, "cgroups", &arr));
	e = json_object_array_get_idx(arr, 0);
	ck_assert(json_object_object_get_ex(e, "cgroup", &v));
	if (strcmp(json_object_get_string(v), paths[0]))
		e = json_object_array_get_idx(arr, 1);
	ck_assert(json_object_object_get_ex(e, "identity", &id));
	ck_assert_str_eq(json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN),
			 "{\"namespace\":\"batch\",\"pod\":\"web-7d9f\",\"container_name\":\"app\","
			 "\"labels\":{\"tier\":\"db\"}}");
	json_object_put(root_j);
}
END_TEST

static Suite *daemon_suite(void)
{
	Suite *s = suite_create("daemon");
	TCase *tc = tcase_create("pass");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_records_follow_cgroup_dirs);
	tcase_add_test(tc, test_observe_asks_kernel_nothing);
	tcase_add_test(tc, test_enforce_reclaim_writes_and_counts);
	tcase_add_test(tc, test_scan_interval_spaces_decisions);
	tcase_add_test(tc, test_policy_keys_reach_the_pass);
	tcase_add_test(tc, test_registrations_select_policies);
	tcase_add_test(tc, test_identity_selects_policies);
	tcase_add_test(tc, test_pinned_ranges_fire_no_split);
	tcase_add_test(tc, test_decision_fit_no_mechanism);
	tcase_add_test(tc, test_status_json_one_cgroup);
	tcase_add_test(tc, test_kubelet_tree_qos_policies);
	tcase_add_test(tc, test_tenant_one_rule);
	tcase_add_test(tc, test_promote_observe_finds_only);
	tcase_add_test(tc, test_promote_thp_disabled_not_asked);
	tcase_add_test(tc, test_promote_nohugepage_opted_out);
	tcase_add_test(tc, test_promote_process_bound_resumes);
	tcase_add_test(tc, test_promote_pass_bound_rotates);
	tcase_add_test(tc, test_promote_pass_windows_remainder);
	suite_add_tcase(s, tc);
	return s;
}

THPS_TEST_MAIN(daemon_suite)
