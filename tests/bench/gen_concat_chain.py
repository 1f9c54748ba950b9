#!/usr/bin/env python3
"""A chain of K DARTS-like blocks for the alias passes' scale benchmark
(tests/bench/passes_scale.sh): each block pools and 1x1-convolves its
input, adds the two, concatenates the sum with a Relu of the Conv, and
mixes the concatenation with a 1x1 Conv into the next block's input. So
the graph has 6K ops and K Concats, each of which the concat pass places
(and the inplace pass writes into) after measuring the lower bound.

usage: gen_concat_chain.py K OUT.json
"""
import json, sys
K=int(sys.argv[1])
ts=[{"name":"x","dtype":"i8","shape":[1,8,8,8],"kind":"input","layout":"NCHW"}]
ops=[]
prev="x"
def T(n,sh,kind=None):
    t={"name":n,"dtype":"i8","shape":sh}
    if kind: t["kind"]=kind
    else: t["layout"]="NCHW"
    ts.append(t); return n
for k in range(K):
    w=T(f"w{k}",[8,8,1,1],"weight"); wc=T(f"wc{k}",[8,16,1,1],"weight")
    b=T(f"b{k}",[1,8,8,8]); c=T(f"c{k}",[1,8,8,8]); n=T(f"n{k}",[1,8,8,8]); m=T(f"m{k}",[1,8,8,8])
    y=T(f"y{k}",[1,16,8,8]); q=T(f"q{k}",[1,8,8,8])
    ops+=[{"name":f"pool{k}","op":"MaxPool","inputs":[prev],"outputs":[b],"attrs":{"kernel_shape":[3,3],"pads":[1,1,1,1]}},
          {"name":f"conv{k}","op":"Conv","inputs":[prev,w],"outputs":[c],"attrs":{"kernel_shape":[1,1]}},
          {"name":f"add{k}","op":"Add","inputs":[b,c],"outputs":[n]},
          {"name":f"relu{k}","op":"Relu","inputs":[c],"outputs":[m]},
          {"name":f"cat{k}","op":"Concat","inputs":[n,m],"outputs":[y],"attrs":{"axis":1}},
          {"name":f"mix{k}","op":"Conv","inputs":[y,wc],"outputs":[q],"attrs":{"kernel_shape":[1,1]}}]
    prev=q
ts[-1]["kind"]="output"; del ts[-1]["layout"]
json.dump({"mplan":"graph/1","name":"manycat","tensors":ts,"ops":ops,"outputs":[prev]},open(sys.argv[2],"w"))
