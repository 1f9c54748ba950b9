#!/usr/bin/env python3
"""random_stats.py -- the outputs of tests/data/random_ops.onnx.bin (a
tensors/1 file) against what each random op promises, given its inputs
(the runner's --write-inputs file): every value in its range, the sample
moments within 5 standard errors of the distribution's, Bernoulli and
Dropout element by element, the Loop's draws different each iteration.
Prints one line per failed check; exit 1 when one fails.

usage: random_stats.py OUTPUTS.mpt INPUTS.mpt
"""
import math
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'ort'))
from compare import read  # noqa: E402

bad = []


def check(cond, what):
    if not cond:
        bad.append(what)


def moments(v):
    n = len(v)
    mean = sum(v) / n
    var = sum((a - mean) ** 2 for a in v) / n
    return mean, var


def f32(a):
    return struct.unpack('<f', struct.pack('<f', a))[0]


out, inp = read(sys.argv[1]), read(sys.argv[2])
x = inp['x'][1]

# RandomUniform on [-2, 3): mean 0.5, variance 25 / 12; and ten bins
u = out['u'][1]
n = len(u)
check(all(-2 <= a < 3 for a in u), 'u: a value outside [-2, 3)')
m, var = moments(u)
check(abs(m - 0.5) < 5 * math.sqrt(25 / 12 / n), 'u: mean %g' % m)
check(abs(var - 25 / 12) < 5 * 25 / 12 * math.sqrt(0.8 / n), 'u: variance %g' % var)
bins = [0] * 10
for a in u:
    bins[min(9, int((a + 2) * 2))] += 1
p = 0.1
check(all(abs(b - n * p) < 5 * math.sqrt(n * p * (1 - p)) for b in bins), 'u: bins %s' % bins)
# lag-1 correlation of consecutive draws
c = sum((u[i] - m) * (u[i + 1] - m) for i in range(n - 1)) / (n - 1) / var
check(abs(c) < 5 / math.sqrt(n), 'u: lag-1 correlation %g' % c)

# RandomNormal, mean 1, scale 0.5: mean, variance, and the share within
# one standard deviation (0.6827)
nv = out['n'][1]
m, var = moments(nv)
check(abs(m - 1) < 5 * 0.5 / math.sqrt(n), 'n: mean %g' % m)
check(abs(var - 0.25) < 5 * 0.25 * math.sqrt(2 / n), 'n: variance %g' % var)
share = sum(1 for a in nv if abs(a - 1) < 0.5) / n
check(abs(share - 0.6827) < 5 * math.sqrt(0.6827 * 0.3173 / n), 'n: share within 1 sd %g' % share)

# the Like forms: the template's shape, their dtype and range
check(out['ul'][0] == [8, 16] and all(0 <= a < 1 for a in out['ul'][1]), 'ul')
check(out['nl'][0] == [8, 16] and len(set(out['nl'][1])) == 128, 'nl')

# Bernoulli of sigmoid(x): 0 or 1 each; the count of ones near the sum
# of the probabilities
b = out['b'][1]
probs = [1 / (1 + math.exp(-a)) for a in x]
check(all(v in (0, 1) for v in b), 'b: a value other than 0 or 1')
want = sum(probs)
sd = math.sqrt(sum(q * (1 - q) for q in probs))
check(abs(sum(b) - want) < 5 * sd, 'b: %d ones, expected %.1f' % (sum(b), want))

# Dropout, ratio 0.25: y is 0 or x / 0.75 (as f32), the mask true where
# it kept x
d, mask = out['d'][1], out['d_mask'][1]
kept = 0
for xi, di, mi in zip(x, d, mask):
    k = f32(xi * (1 / 0.75))
    check(di == (k if mi else 0), 'd: %g from %g with mask %d' % (di, xi, mi))
    kept += mi
check(abs(kept - 96) < 5 * math.sqrt(128 * 0.75 * 0.25), 'd: kept %d of 128' % kept)

# the Loop: four draws of six, all different
draws = out['draws'][1]
rows = [tuple(draws[i * 6:(i + 1) * 6]) for i in range(4)]
check(len(set(rows)) == 4 and all(0 <= a < 1 for a in draws), 'draws: rows repeat')

# Multinomial: 4000 classes a row of the logits below, each class's count
# within 5 standard errors of its softmax probability; -inf never drawn
logits = [[0, 1, 2, 0.5, -1], [3, 0, 0, 0, 0], [-30, 0, 0, float('-inf'), 1]]
cls = out['classes'][1]
check(out['classes'][0] == [3, 4000], 'classes: shape')
for r, row in enumerate(logits):
    top = max(row)
    w = [math.exp(a - top) for a in row]
    probs = [a / sum(w) for a in w]
    got = cls[r * 4000:(r + 1) * 4000]
    for k, q in enumerate(probs):
        cnt = sum(1 for g in got if g == k)
        sd = math.sqrt(4000 * q * (1 - q))
        check(abs(cnt - 4000 * q) <= 5 * sd, 'classes: row %d class %d drawn %d times, expected %.1f'
              % (r, k, cnt, 4000 * q))
    check(all(0 <= g < 5 for g in got), 'classes: row %d: a class out of range' % r)

for w in bad:
    print('random_stats: ' + w)
sys.exit(1 if bad else 0)
