// Several expositions made one (several teams): a family written once with every part's samples,
// each team's samples labelled, the exporter's left as they are.
import { describe, expect, it } from "vitest";
import { mergeFamilies, splitFamilies } from "../../src/exposition/merge.js";

const PART = `# HELP x_sandboxes Sandboxes by state.
# TYPE x_sandboxes gauge
x_sandboxes{state="running"} 3
x_sandboxes{state="paused"} 1
# HELP x_up Up.
# TYPE x_up gauge
x_up 1
# HELP x_empty Labels given as {}.
# TYPE x_empty gauge
x_empty{} 2
`;

describe("splitFamilies and mergeFamilies", () => {
  it("writes each family once: the exporter's samples first, then each team's, labelled", () => {
    const merged = mergeFamilies([
      splitFamilies(PART),
      splitFamilies(PART, 'team="a"'),
      splitFamilies(PART, 'team="b"'),
    ]);
    expect(merged.match(/^# TYPE x_sandboxes gauge$/gm)).toHaveLength(1);
    expect(merged).toContain(`x_sandboxes{state="running"} 3
x_sandboxes{state="paused"} 1
x_sandboxes{team="a",state="running"} 3
x_sandboxes{team="a",state="paused"} 1
x_sandboxes{team="b",state="running"} 3`);
    expect(merged).toContain('x_up 1\nx_up{team="a"} 1\nx_up{team="b"} 1\n');
    expect(merged).toContain('x_empty{team="a"} 2\n');
  });

  it("keeps a sample's own team label (the team metrics name their team already)", () => {
    const own = '# TYPE t gauge\nt{team="a",x="1"} 4\n';
    expect(mergeFamilies([splitFamilies(own, 'team="a"')])).toBe(own);
  });

  it("leaves label values alone, whatever they hold", () => {
    const tricky = '# TYPE m gauge\nm{v="a {b} c",w="x y"} 1\n';
    expect(mergeFamilies([splitFamilies(tricky, 'team="t"')])).toBe(
      '# TYPE m gauge\nm{team="t",v="a {b} c",w="x y"} 1\n',
    );
  });

  it("reads OpenMetrics: counters' _total and _created samples stay with their family, # EOF is left out", () => {
    const om = `# HELP c_requests Requests.
# TYPE c_requests counter
c_requests_total{code="200"} 5
c_requests_created{code="200"} 1.7e9
# HELP h Latency.
# TYPE h histogram
h_bucket{le="0.1"} 1
h_bucket{le="+Inf"} 2
h_sum 0.3
h_count 2
# EOF
`;
    const merged = mergeFamilies([splitFamilies(om, 'team="a"'), splitFamilies(om, 'team="b"')]);
    expect(merged).not.toContain("# EOF");
    expect(merged.match(/^# TYPE/gm)).toHaveLength(2);
    expect(merged).toContain(
      'c_requests_created{team="a",code="200"} 1.7e9\nc_requests_total{team="b",code="200"} 5\n',
    );
    expect(merged).toContain('h_count{team="a"} 2\nh_bucket{team="b",le="0.1"} 1\n');
  });

  it("makes a family only one part has, at the place that part gives it", () => {
    const a = "# TYPE only_a gauge\nonly_a 1\n";
    const merged = mergeFamilies([splitFamilies(PART), splitFamilies(a, 'team="a"')]);
    expect(merged.endsWith('# TYPE only_a gauge\nonly_a{team="a"} 1\n')).toBe(true);
  });
});
