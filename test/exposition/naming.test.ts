import { describe, expect, it } from "vitest";
import {
  extraLabelNames,
  fieldMetric,
  fieldMetrics,
  labelName,
} from "../../src/exposition/naming.js";

const suffix = (f: string) => fieldMetric(f)?.suffix;

describe("fieldMetric", () => {
  it("turns *_count fields into plurals, as docs/metrics.md documents", () => {
    expect(suffix("node_count")).toBe("nodes");
    expect(suffix("ready_node_count")).toBe("ready_nodes");
    expect(suffix("cpu_count")).toBe("cpus");
    expect(suffix("entry_count")).toBe("entries");
    expect(suffix("sandbox_starting_count")).toBe("sandbox_starting");
    expect(suffix("count")).toBe("count_value");
  });

  it("converts unit words to base units with the factor to apply", () => {
    expect(fieldMetric("memory_mb")).toEqual({ suffix: "memory_bytes", mul: 1_048_576, div: 1 });
    expect(fieldMetric("disk_size_gib")).toEqual({
      suffix: "disk_size_bytes",
      mul: 1_073_741_824,
      div: 1,
    });
    expect(fieldMetric("uptime_ms")).toEqual({ suffix: "uptime_seconds", mul: 1, div: 1_000 });
    expect(fieldMetric("ttl_h")).toEqual({ suffix: "ttl_seconds", mul: 3_600, div: 1 });
    expect(fieldMetric("idle_minutes")).toEqual({ suffix: "idle_seconds", mul: 60, div: 1 });
    expect(fieldMetric("memory_bytes")).toEqual({ suffix: "memory_bytes", mul: 1, div: 1 });
  });

  it("keeps acronym plurals split by snake-casing (CPUs -> cp_us) from reading as microseconds", () => {
    expect(fieldMetric("allocated_cp_us")).toEqual({ suffix: "allocated_cpus", mul: 1, div: 1 });
    expect(fieldMetric("running_v_ms")).toEqual({ suffix: "running_vms", mul: 1, div: 1 });
  });

  it("moves reserved endings and metric type words out of the way", () => {
    expect(suffix("cpu_total")).toBe("cpu_total_value");
    expect(suffix("quota_bucket")).toBe("quota_bucket_value");
    expect(suffix("latency_sum")).toBe("latency_sum_value");
    expect(suffix("build_info")).toBe("build_info_value");
    expect(suffix("request_counter")).toBe("request_counters");
    expect(suffix("summary_running")).toBe("summaries_running");
  });

  it("snake-cases keys and has nothing to offer for keys without a word", () => {
    expect(suffix("memoryTotalBytes")).toBe("memory_total_bytes");
    expect(suffix("__private")).toBe("private");
    expect(suffix("a.b-c")).toBe("a_b_c");
    expect(fieldMetric("")).toBeUndefined();
    expect(fieldMetric("__")).toBeUndefined();
  });
});

describe("fieldMetrics", () => {
  it("lets the field already named as its metric win, and leaves the clashing one out", () => {
    const { metrics, skipped } = fieldMetrics(
      ["memory_mb", "memory_bytes", "node_count", "nodes", "status", "x"],
      new Set(["status"]),
    );
    expect([...metrics.keys()].sort()).toEqual(["memory_bytes", "nodes", "x"]);
    expect(skipped.sort()).toEqual(["memory_mb", "node_count", "status"]);
  });

  it("gives every kept field a distinct name, whatever the input", () => {
    const fields = ["cpu_count", "cpus", "cpu_counts", "cpuCount", "CPUs", "cpu-count", "c_p_us"];
    const { metrics } = fieldMetrics(fields, new Set());
    const names = [...metrics.values()].map((m) => m.suffix);
    expect(new Set(names).size).toBe(names.length);
  });
});

describe("label names", () => {
  it("are snake_case, never reserved, never starting with a digit", () => {
    expect(labelName("teamName")).toBe("team_name");
    expect(labelName("__meta")).toBe("meta");
    expect(labelName("9zone")).toBe("_9zone");
    expect(labelName("cost-center")).toBe("cost_center");
    expect(labelName("!!")).toBe("key");
  });

  it("prefix names that clash with fixed or format labels and drop a second key of one name", () => {
    expect(
      extraLabelNames(
        ["team", "state", "le", "teamName", "team_name", "team-name"],
        ["state"],
        "metadata_",
      ),
    ).toEqual({
      pairs: [
        ["team", "team"],
        ["state", "metadata_state"],
        ["le", "metadata_le"],
        ["teamName", "team_name"],
      ],
      skipped: ["team_name", "team-name"],
    });
  });
});
