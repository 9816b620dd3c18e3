import json,sys,collections,re
d=json.load(open(sys.argv[1]))
med={}
for b in d['benchmarks']:
    if b.get('aggregate_name')!='median': continue
    n=b['run_name'].replace('/iterations:1/manual_time','')
    med[n]=(b['time_us'] if 'time_us' in b else b['real_time'], b.get('gpu_us'))
groups=collections.defaultdict(dict)
for n,v in med.items():
    m=re.match(r'(.*)/lead:(\d+)$',n)
    groups[m.group(1)][int(m.group(2))]=v
leads=sorted({l for g in groups.values() for l in g})
print('%-36s'%'case'+''.join('  lead%-2d gpu (fenced)  '%l for l in leads))
for k in sorted(groups):
    g=groups[k]; b=g[0]
    s='%-36s'%k
    for l in leads:
        t,gp=g[l]
        s+='  %7.1f (%6.1f) %+5.1f%%'%(gp,t,100*(gp/b[1]-1)) if l else '  %7.1f (%6.1f)       '%(gp,t)
    print(s)
