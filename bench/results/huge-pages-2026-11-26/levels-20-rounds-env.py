import subprocess, json, random, os, sys, time
models = sorted(f for f in os.listdir('/tmp/ovh/thp/models') if f.endswith('.onnx'))
rounds = int(sys.argv[1]); out = open(sys.argv[2], 'a')
random.seed(int(sys.argv[3]))
items = [(m, arm) for m in models for arm in ('4k', 'thp') for _ in range(rounds)]
random.shuffle(items)
N = sys.argv[4] if len(sys.argv) > 4 else '/work/main/build/nn-meter'
for i, (m, arm) in enumerate(items):
    env = dict(os.environ)
    if arm == 'thp': env['GLIBC_TUNABLES'] = 'glibc.malloc.hugetlb=1'
    t = time.time()
    r = subprocess.run([N, '--json', 'benchmark', '--onnx', '/tmp/ovh/thp/models/' + m, '--runs', '10', '--rounds', '2',
                        '--warmup', '5', '--repeats', '1'], env=env, capture_output=True, text=True)
    wall = time.time() - t
    try:
        lat = json.loads(r.stdout)['result']['latency_ms']
    except Exception:
        lat = None
    out.write(json.dumps({'model': m, 'arm': arm, 'ms': lat, 'wall': wall, 't': t}) + '\n'); out.flush()
