// Well-formed answers with hostile data in them: odd numbers, label injection, 1 MB label values,
// bytes that are not UTF-8. The exposition must stay valid and say nothing false.
import { afterEach, beforeAll, describe, expect, it } from "vitest";
import { promtool, promtoolReady } from "../helpers/promtool.js";
import { openMetricsProblems } from "../metrics/fixtures.js";
import { expectAllCollectorsOk, expectHealthyAndSealed } from "./checks.js";
import { parseSamples, type Sample } from "./exposition.js";
import { type Fleet, type FleetSandbox, makeFleet } from "./fleet.js";
import { get, OPENMETRICS, type Rig, rssMb, startRig, statusOf } from "./harness.js";

const MB = 1_048_576;
/** The longest label value the exporter may print: the 1024-char cap plus a visible suffix. */
const LABEL_CAP = 1024;
const SUFFIX_ALLOWANCE = 64;
/** Families whose values are sums or sizes of resources: never negative, never NaN or Inf. */
const RESOURCE_FAMILIES = [
  "sandbox_sandboxes_cpus",
  "sandbox_sandboxes_memory_bytes",
  "sandbox_sandbox_cpus",
  "sandbox_sandbox_memory_bytes",
];

let rig: Rig | undefined;

beforeAll(async () => {
  expect(await promtoolReady(), "promtool never appeared at /usr/bin/promtool").toBe(true);
}, 90_000);

afterEach(async () => {
  await rig?.stop();
  rig = undefined;
});

function sandbox(id: string, over: Partial<FleetSandbox> = {}): FleetSandbox {
  return {
    sandboxID: id,
    templateID: "base",
    state: "running",
    cpuCount: 2,
    memoryMB: 512,
    startedAt: Date.UTC(2026, 0, 15),
    metadata: { team: "ml", env: "prod" },
    ...over,
  };
}

/** Adds a sandbox whose list record is exactly `json` (values JSON.stringify cannot write). */
function addRaw(fleet: Fleet, id: string, json: string | Buffer, template = "odd"): void {
  fleet.sandboxes.set(id, sandbox(id, { templateID: template }));
  fleet.raw.set(id, typeof json === "string" ? Buffer.from(json, "utf8") : json);
}

function withTemplate(fleet: Fleet, id: string, extra: Record<string, unknown> = {}): void {
  fleet.templates.push({ templateID: id, buildID: "b-1", buildStatus: "ready", ...extra });
}

/** Samples of the resource families that are negative, NaN or infinite. */
function badResourceValues(samples: Sample[]): string[] {
  return samples
    .filter((s) => RESOURCE_FAMILIES.includes(s.name))
    .filter((s) => !Number.isFinite(Number(s.value)) || Number(s.value) < 0 || s.value === "-0")
    .map((s) => s.line.slice(0, 200));
}

async function scrapeParsed(r: Rig): Promise<{ text: string; samples: Sample[] }> {
  const { text } = await get(r, "/metrics");
  return { text, samples: parseSamples(text) };
}

describe("chaos: hostile numbers", () => {
  it("keeps finite odd numbers (-0, negative cpu and memory, 20-digit integers) out of negative sums", async () => {
    const fleet = makeFleet(40);
    withTemplate(fleet, "odd");
    const t = '"templateID":"odd","state":"running","startedAt":"2026-01-15T12:00:00Z"';
    addRaw(fleet, "sb-odd-1", `{"sandboxID":"sb-odd-1",${t},"cpuCount":-0,"memoryMB":-0}`);
    addRaw(fleet, "sb-odd-2", `{"sandboxID":"sb-odd-2",${t},"cpuCount":-4,"memoryMB":-1024}`);
    addRaw(
      fleet,
      "sb-odd-3",
      `{"sandboxID":"sb-odd-3",${t},"cpuCount":12345678901234567890,"memoryMB":9007199254740993}`,
    );
    addRaw(
      fleet,
      "sb-odd-4",
      '{"sandboxID":"sb-odd-4","templateID":"odd","state":"running","startedAt":-1,"cpuCount":1,"memoryMB":1}',
    );
    rig = await startRig({ fleet, argv: ["--per-sandbox-metrics"] });
    const rss = rssMb();
    await rig.e.runCycle();
    await expectAllCollectorsOk(rig, "finite numbers are numbers");
    const { samples } = await scrapeParsed(rig);
    expect.soft(badResourceValues(samples), "negative or non-finite resource values").toEqual([]);
    const odd = samples.filter(
      (s) => s.name === "sandbox_sandboxes" && s.labels.template === "odd",
    );
    expect
      .soft(
        odd.reduce((n, s) => n + Number(s.value), 0),
        "odd sandboxes counted",
      )
      .toBe(4);
    await expectHealthyAndSealed(rig, rss);
  });

  it('never exports NaN or Inf for 1e309, "NaN" or "Infinity" (in sandboxes, nodes and the overview)', async () => {
    const fleet = makeFleet(40);
    withTemplate(fleet, "odd");
    const t = '"templateID":"odd","state":"running","startedAt":"2026-01-15T12:00:00Z"';
    addRaw(fleet, "sb-inf-1", `{"sandboxID":"sb-inf-1",${t},"cpuCount":1e309,"memoryMB":512}`);
    addRaw(fleet, "sb-inf-2", `{"sandboxID":"sb-inf-2",${t},"cpuCount":2,"memoryMB":"NaN"}`);
    addRaw(fleet, "sb-inf-3", `{"sandboxID":"sb-inf-3",${t},"cpuCount":"Infinity","memoryMB":1}`);
    rig = await startRig({ fleet, argv: ["--per-sandbox-metrics"] });
    const rss = rssMb();
    rig.up.fault("GET /cluster/overview", {
      kind: "body",
      body: '{"nodeCount":1e309,"sandboxCount":-0,"cpuAllocated":"NaN","memoryTotalMB":12345678901234567890,"diskFreeMB":-1e309,"ratio":"Infinity"}',
    });
    rig.up.fault("GET /nodes", {
      kind: "body",
      body: '[{"nodeID":"node-a","status":"ready","cpuCount":1e309,"memoryMB":"NaN","sandboxCount":-0,"load":-1e309}]',
    });
    await rig.e.runCycle();
    const { doc } = await statusOf(rig);
    for (const c of ["overview", "nodes"])
      expect
        .soft(doc.collectors[c]?.success, `${c}: ${doc.collectors[c]?.error?.message}`)
        .toBe(true);
    const walk = doc.collectors.sandboxes;
    // Either the odd values are dropped, or the walk fails as a bad body: never a wrong number.
    if (!walk?.success)
      expect.soft(walk?.error?.code, "a failed walk's code").toBe("ERR_PLATFORM_BAD_BODY");
    const { samples } = await scrapeParsed(rig);
    const nonFinite = samples
      .filter((s) => s.name.startsWith("sandbox_") && !s.name.startsWith("sandbox_exporter_"))
      .filter((s) => !Number.isFinite(Number(s.value)))
      .map((s) => s.line.slice(0, 200));
    expect.soft(nonFinite, "NaN or Inf platform values").toEqual([]);
    expect.soft(badResourceValues(samples), "negative or non-finite resource values").toEqual([]);
    await expectHealthyAndSealed(rig, rss);
  });
});

describe("chaos: hostile label values", () => {
  it("escapes injected ids, templates, states and metadata (promtool passes, values round-trip)", async () => {
    const fleet = makeFleet(30);
    const nasty = [
      'sb-inj-"quoted"',
      "sb-inj-back\\slash\\",
      "sb-inj-new\nline",
      'sb-inj-"} 1\nsandbox_fake{x="y"} 1\n# HELP',
      'sb-inj-\\"} 1',
      "sb-inj-tab\tand space",
      "sb-inj-unicode-ü-💥",
    ];
    const templates = ['tpl-"} 1\n# TYPE x counter', "tpl-back\\"];
    for (const t of templates) withTemplate(fleet, t);
    nasty.forEach((id, i) => {
      fleet.sandboxes.set(
        id,
        sandbox(id, {
          templateID: templates[i % 2] as string,
          state: i === 0 ? 'Running"} 1\n' : "running",
          metadata: { team: 'a"b\\c\nd"} 1', env: "\\n" },
        }),
      );
    });
    fleet.nodes.push({ nodeID: 'node-"} 1\n#', status: 'rea"dy', zone: 'eu"\\\n' });
    rig = await startRig({
      fleet,
      argv: ["--per-sandbox-metrics", "--metadata-labels", "team,env"],
    });
    const rss = rssMb();
    await rig.e.runCycle();
    await expectAllCollectorsOk(rig, "odd strings are still strings");
    const { samples } = await scrapeParsed(rig);
    const info = samples.filter((s) => s.name === "sandbox_sandbox_info");
    expect
      .soft(new Set(info.map((s) => s.labels.sandbox_id)))
      .toEqual(new Set(fleet.sandboxes.keys()));
    for (const s of info) {
      const want = fleet.sandboxes.get(s.labels.sandbox_id ?? "");
      expect
        .soft(s.labels.template, `template of ${JSON.stringify(s.labels.sandbox_id)}`)
        .toBe(want?.templateID);
      expect
        .soft(s.labels.team, `team of ${JSON.stringify(s.labels.sandbox_id)}`)
        .toBe(want?.metadata.team);
    }
    expect
      .soft(
        samples.filter((s) => s.name === "sandbox_fake"),
        "an injected series",
      )
      .toEqual([]);
    const om = await get(rig, "/metrics", { accept: OPENMETRICS });
    expect.soft(openMetricsProblems(om.text).slice(0, 5), "OpenMetrics problems").toEqual([]);
    await expectHealthyAndSealed(rig, rss);
  });

  it("truncates a 1 MB label value to at most 1024 characters plus a visible suffix", async () => {
    const fleet = makeFleet(30);
    const long = (marker: string) => `${marker}${"x".repeat(MB)}`;
    const template = long("tpl-LONG-");
    withTemplate(fleet, template, { buildID: long("ver-LONG-") });
    fleet.sandboxes.set(
      "sb-long-1",
      sandbox("sb-long-1", {
        templateID: template,
        metadata: { team: long("team-LONG-"), env: "prod" },
      }),
    );
    fleet.nodes.push({ nodeID: long("node-LONG-"), status: "ready", cpuCount: 8 });
    rig = await startRig({
      fleet,
      argv: ["--per-sandbox-metrics", "--metadata-labels", "team,env"],
    });
    const rss = rssMb();
    await rig.e.runCycle();
    await expectAllCollectorsOk(rig, "a long string is still a string");
    const { text, samples } = await scrapeParsed(rig);
    const tooLong: string[] = [];
    const noSuffix: string[] = [];
    let truncated = 0;
    for (const s of samples)
      for (const [k, v] of Object.entries(s.labels)) {
        if (v.length > LABEL_CAP + SUFFIX_ALLOWANCE)
          tooLong.push(`${s.name} ${k}: ${v.length} chars`);
        if (/^(tpl|ver|team|node)-LONG-x/.test(v)) {
          truncated++;
          if (v.endsWith("x")) noSuffix.push(`${s.name} ${k} ends "...${v.slice(-12)}"`);
        }
      }
    expect.soft(tooLong.slice(0, 10), "label values over the cap").toEqual([]);
    expect.soft(noSuffix.slice(0, 10), "truncated values without a visible suffix").toEqual([]);
    expect.soft(truncated, "truncated values exported").toBeGreaterThan(0);
    const info = samples.find(
      (s) => s.name === "sandbox_sandbox_info" && s.labels.sandbox_id === "sb-long-1",
    );
    expect
      .soft(info?.labels.template?.startsWith("tpl-LONG-xxxx"), "sb-long-1 keeps its series")
      .toBe(true);
    expect.soft(text.length, "/metrics size").toBeLessThan(MB);
    await expectHealthyAndSealed(rig, rss);
  });

  it("keeps series distinct when two 1 MB ids and two 1 MB templates share their first megabyte", async () => {
    const fleet = makeFleet(30);
    const head = "x".repeat(MB);
    for (const t of ["a", "b"]) withTemplate(fleet, `tpl-${head}-${t}`);
    for (const t of ["a", "b"])
      fleet.sandboxes.set(
        `sb-${head}-${t}`,
        sandbox(`sb-${head}-${t}`, { templateID: `tpl-${head}-${t}` }),
      );
    rig = await startRig({ fleet, argv: ["--per-sandbox-metrics"] });
    const rss = rssMb();
    await rig.e.runCycle();
    const { samples } = await scrapeParsed(rig);
    const keys = samples.map((s) => `${s.name}${JSON.stringify(s.labels)}`);
    const dupes = keys.filter((k, i) => keys.indexOf(k) !== i).map((k) => k.slice(0, 120));
    expect.soft(dupes, "series that differ only past the truncation point").toEqual([]);
    const info = samples.filter((s) => s.name === "sandbox_sandbox_info");
    expect.soft(info.length, "one sandbox_info per sandbox").toBe(fleet.sandboxes.size);
    await expectHealthyAndSealed(rig, rss);
  });

  it("keeps /metrics valid UTF-8 when records carry bytes that are not UTF-8", async () => {
    const fleet = makeFleet(30);
    withTemplate(fleet, "odd");
    const bytes = Buffer.concat([
      Buffer.from('{"sandboxID":"sb-bin-'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from(
        '","templateID":"odd","state":"running","cpuCount":1,"memoryMB":1,"metadata":{"team":"',
      ),
      Buffer.from([0xed, 0xa0, 0x80, 0xc3, 0x28]),
      Buffer.from('"}}'),
    ]);
    addRaw(fleet, "sb-bin-", bytes);
    rig = await startRig({ fleet, argv: ["--per-sandbox-metrics", "--metadata-labels", "team"] });
    const rss = rssMb();
    await rig.e.runCycle();
    const { doc } = await statusOf(rig);
    const walk = doc.collectors.sandboxes;
    if (!walk?.success)
      expect.soft(walk?.error?.code, "a failed walk's code").toBe("ERR_PLATFORM_BAD_BODY");
    const res = await fetch(`${rig.e.server.url}/metrics`);
    const raw = new Uint8Array(await res.arrayBuffer());
    expect
      .soft(() => new TextDecoder("utf-8", { fatal: true }).decode(raw), "/metrics is UTF-8")
      .not.toThrow();
    expect.soft(promtool(Buffer.from(raw).toString("utf8")).status).toBe(0);
    await expectHealthyAndSealed(rig, rss);
  });
});
