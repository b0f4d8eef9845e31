// Times ONNX models on ONNX Runtime (onnxruntime-node, CPU) with the methodology of onednn_cpu's profile:
// warm-up, then rounds of >= RUNS runs and >= MIN_MS, median of each round, median across rounds.
// usage: node ort_time.js THREADS MODEL.onnx [MODEL.onnx ...]   (one JSON line per model)
const ort = require('onnxruntime-node');

// WARMUP, RUNS, ROUNDS from the environment override the defaults (the benches keep all engines alike).
const env = (k, d) => (process.env[k] ? Number(process.env[k]) : d);
const WARMUP = env('WARMUP', 10), RUNS = env('RUNS', 20), ROUNDS = env('ROUNDS', 5), MIN_MS = 20;

function median(v) {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function time(file, threads) {
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(file, {
    intraOpNumThreads: threads, interOpNumThreads: 1, executionMode: 'sequential', graphOptimizationLevel: 'all'});
  const initMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const feeds = {};
  for (const name of session.inputNames) {
    const meta = session.inputMetadata ? session.inputMetadata.find((m) => m.name === name) : null;
    const dims = meta && meta.shape ? meta.shape.map((d) => (typeof d === 'number' ? d : 1)) : [1, 3, 224, 224];
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; ++i) data[i] = Math.sin(i) ;
    feeds[name] = new ort.Tensor('float32', data, dims);
  }
  for (let i = 0; i < WARMUP; ++i) await session.run(feeds);
  const rounds = [];
  for (let r = 0; r < ROUNDS; ++r) {
    const samples = [];
    const start = process.hrtime.bigint();
    while (samples.length < RUNS || Number(process.hrtime.bigint() - start) / 1e6 < MIN_MS) {
      const a = process.hrtime.bigint();
      await session.run(feeds);
      samples.push(Number(process.hrtime.bigint() - a) / 1e6);
    }
    rounds.push(median(samples));
  }
  return {model: file, threads, init_ms: initMs, median_ms: median(rounds), rounds_ms: rounds};
}

(async () => {
  const threads = parseInt(process.argv[2], 10);
  for (const file of process.argv.slice(3)) console.log(JSON.stringify(await time(file, threads)));
})().catch((e) => { console.error(String(e)); process.exit(1); });
