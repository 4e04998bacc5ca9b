"""Sample law files shared by the tests."""

# ruff: noqa: E501  (a law file's provenance lines are long by design)
GOOD = """\
# comments anywhere are kept
schema: lawkit/1
labels: {cell: crs005, model: deepseek-v4-pro, parallel: dpa8, role: prefill}
host:
  key:
    atom: "68ad8fc6"            # the digest these laws price
  laws:
    - name: prefill
      target: host_s
      where: {phase: "prefill"}
      filter: "num_seqs <= 256"
      terms: {"1": 0.0021, num_seqs: 0.00012, num_tokens: 3.1e-08, "num_seqs:max_context": 1.0e-12}
      fit: {method: ols, n: 9120, r2: 0.982}
      domain: {num_seqs: [1, 256], num_tokens: [1, 16384]}
  provenance:
    - {fit: {digest: "59e9ff5a", at: "2026-10-02T11:20:00Z", records: 18234, body: "9c", captures: []}}
    - {rekey: {from: "59e9ff5a", to: "68ad8fc6", at: "2026-11-10T09:12:44Z", why: "doc", refs: ["#2655"]}}
device: {gpu: a100}
"""
