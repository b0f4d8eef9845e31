#!/usr/bin/env python3
"""Cuts every network into blocks of consecutive layers for bench/run_context_blocks.sh: for each step of a
network's plan (one oneDNN primitive with the ONNX nodes fused into it), the ONNX subgraph of that step and the
DEPTH steps before it, with every tensor the block reads from outside as a graph input. Timed step by step
(bench/composition_steps), the block's last step runs after its real producers, its input just written by them
and the caches holding what they left: how that layer costs "in context", against inside the whole network and
alone. Needs python3-onnx.

    context_blocks.py cut STEPS.jsonl.gz MODELS_DIR OUT_DIR DEPTH [NETWORK...]
    context_blocks.py report STEPS.jsonl.gz RUN_DIR...  (one folder per depth with the blocks' repeat*.jsonl; the
                                                       kernel uses from the oracle run's results.json)
"""
import gzip
import json
import math
import os
import sys

import composition_steps as cs


def step_nodes(step):
    return [step["node"]] + step.get("fused", [])


def cut(steps_path, models, out, depth, networks):
    import onnx  # only cutting needs python3-onnx; the report runs on a bare python3
    import onnx.helper
    import onnx.shape_inference

    data = cs.load(steps_path)
    networks = networks or sorted({m for m, p in data if "kernel_ids" in data[(m, p)]})
    written = 0
    for net in networks:
        path = os.path.join(models, net + ".onnx")
        # Shapes once per network; onnx.utils.extract_model re-infers the whole network per block (minutes).
        model = onnx.shape_inference.infer_shapes(onnx.load(path))
        graph = model.graph
        typed = {v.name: v for v in list(graph.input) + list(graph.value_info) + list(graph.output)}
        weights = {i.name: i for i in graph.initializer}
        producer = {o: n.name for n in graph.node for o in n.output}
        by_name = {n.name: n for n in graph.node}
        steps = [s for s in data[(net, "cold0")]["steps"] if s.get("node") in by_name]
        os.makedirs(out, exist_ok=True)
        for i, step in enumerate(steps):
            block = steps[max(0, i - depth):i + 1]
            nodes = [by_name[n] for s in block for n in step_nodes(s) if n in by_name]
            # Constant nodes feeding the block stay constants (a Reshape's shape), not inputs.
            nodes += [by_name[producer[t]] for n in nodes for t in n.input
                      if t in producer and by_name[producer[t]].op_type == "Constant"]
            produced = {o for n in nodes for o in n.output}
            inputs = sorted({t for n in nodes for t in n.input if t and t not in produced and t not in weights})
            used = sorted({t for n in nodes for t in n.input if t in weights})
            output = by_name[step_nodes(step)[-1]].output[0]
            static = lambda t: t in typed and typed[t].type.tensor_type.HasField("shape") and all(
                d.HasField("dim_value") for d in typed[t].type.tensor_type.shape.dim)
            if not all(static(t) for t in inputs + [output]):
                print(f"{net} step {i} ({step['node']}): a tensor without a static shape; left out", file=sys.stderr)
                continue
            block_graph = onnx.helper.make_graph(nodes, f"{net}_{i}", [typed[t] for t in inputs], [typed[output]],
                                                 [weights[t] for t in used])
            block_model = onnx.helper.make_model(block_graph, opset_imports=model.opset_import)
            onnx.save(block_model, os.path.join(out, f"{net}__{i:04d}_{step['node']}.onnx"))
            written += 1
    print(f"{written} blocks of depth {depth} in {out}")


def score(errors):
    n = len(errors)
    return (f"±5 % {100 * sum(abs(e) <= 0.05 for e in errors) / n:5.1f}  ±10 % "
            f"{100 * sum(abs(e) <= 0.10 for e in errors) / n:5.1f}  RMSPE {100 * math.sqrt(sum(e * e for e in errors) / n):4.1f}")


def factor_family_out(rows, source):
    """Errors of rows[source] scaled by one factor fitted on the other families."""
    family = lambda m: m.split("_r")[0]
    out = []
    for r in rows:
        train = [x for x in rows if family(x["model"]) != family(r["model"])]
        out.append(r[source] * sum(x["measured"] / x[source] for x in train) / len(train) / r["measured"] - 1)
    return out


def in_context(run):
    """{(network, node): ms of that step as the last of its block}, from the process with the least sum."""
    times = {}
    for (model, _), rec in cs.load(run).items():
        net, block = model.split("__")
        node = block.split("_", 1)[1]
        for s in rec["steps"]:
            if s.get("node") == node:
                times[(net, node)] = s["ms"]
    return times


def report(steps_path, runs):
    data = cs.load(steps_path)
    with gzip.open(cs.DEFAULT_ORACLE, "rt") as f:
        uses = {m["model"]: [u["id"] for u in m["kernel_uses"] for _ in range(u.get("groups", 1))]
                for m in json.load(f)["models"]}
    networks = sorted({m for m, p in data if "kernel_ids" in data[(m, p)]})
    contexts = [(run, in_context(run)) for run in runs]
    print("per network: Σ of its steps timed as the last of a block, and Σ of its kernels alone (cold0), "
          "against the network (its steps inside it; its time whole)")
    rows = []
    for net in networks:
        rec = data[(net, "cold0")]
        steps = [s for s in rec["steps"] if s.get("node")]
        r = {"model": net, "measured": rec["total_ms"], "inside": sum(s["ms"] for s in steps),
             "alone": sum(data[(kid, "cold0")]["total_ms"] for kid in uses[net])}
        for run, times in contexts:
            got = [(times.get((net, s["node"])), s["ms"]) for s in steps]
            r[run] = sum(t if t is not None else ms for t, ms in got)  # a block that failed: its inside time
            r[run + " missing"] = sum(1 for t, _ in got if t is None)
        rows.append(r)
    for run, _ in contexts:
        ratio = [r[run] / r["inside"] - 1 for r in rows]
        mean = sum(ratio) / len(ratio)
        sd = math.sqrt(sum((x - mean) ** 2 for x in ratio) / len(ratio))
        print(f"  {run}: Σ in context vs Σ inside: mean {100 * mean:+5.1f} %, spread {100 * sd:4.1f} %; "
              f"blocks missing {sum(r[run + ' missing'] for r in rows)}")
        print(f"    vs the network timed whole, plain      {score([r[run] / r['measured'] - 1 for r in rows])}")
        print(f"    vs the network timed whole, one factor {score(factor_family_out(rows, run))} (family out)")
    print(f"  kernels alone, plain                      {score([r['alone'] / r['measured'] - 1 for r in rows])}")
    print(f"  kernels alone, one factor                 {score(factor_family_out(rows, 'alone'))} (family out)")
    print(f"  the network's own steps summed, plain     {score([r['inside'] / r['measured'] - 1 for r in rows])}")


def main():
    if sys.argv[1] == "cut":
        cut(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), sys.argv[6:])
    elif sys.argv[1] == "report":
        report(sys.argv[2], sys.argv[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
