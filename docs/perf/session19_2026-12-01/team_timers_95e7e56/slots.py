import sys,collections
for f in sys.argv[1:]:
    rows=[l.split() for l in open(f) if not l.startswith('#')]
    rows=[(int(a),int(b),int(c),int(d),int(e)) for a,b,c,d,e in rows]
    t0=min(r[2] for r in rows)
    bysm=collections.defaultdict(list)
    for r in rows: bysm[r[1]].append(r)
    slot=collections.defaultdict(list)
    for sm,rs in bysm.items():
        rs.sort()
        for i,r in enumerate(rs): slot[(i,r[4])].append(((r[3]-t0)/1e3,(r[3]-r[2])/1e3/r[4]))
    print(f)
    for k in sorted(slot):
        v=slot[k]; n=len(v)
        print("  slot %d items %d: n=%3d end mean %.1f  us/item %.2f"%(k[0],k[1],n,sum(x[0] for x in v)/n,sum(x[1] for x in v)/n))
    # per SM: idle slot time = sum(maxend-end)
    idle=0;tot=0
    for sm,rs in bysm.items():
        m=max(r[3] for r in rs); idle+=sum(m-r[3] for r in rs)/1e3; tot+=len(rs)*(m-t0)/1e3
    print("  within-SM slot idle (vs SM end) %.1f %%"%(100*idle/tot))
