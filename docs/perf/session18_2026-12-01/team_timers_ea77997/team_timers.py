import sys, collections
for fn in sys.argv[1:]:
    lines=open(fn).read().split('\n')
    hdr=[l for l in lines if l.startswith('#')]
    rows=[list(map(int,l.split())) for l in lines if l and not l.startswith('#')]
    t0=min(r[2] for r in rows); t1=max(r[3] for r in rows)
    span=(t1-t0)/1e3
    sm=collections.defaultdict(list)
    for r in rows: sm[r[1]].append(r)
    act=[(max(x[3] for x in v)-min(x[2] for x in v))/1e3 for v in sm.values()]
    busy=sum(sum((x[3]-x[2]) for x in v)/1e3 for v in sm.values())
    ends=sorted((r[3]-t0)/1e3 for r in rows)
    starts=sorted((r[2]-t0)/1e3 for r in rows)
    items=collections.Counter(r[4] for r in rows)
    tpsm=collections.Counter(len(v) for v in sm.values())
    print(fn.split('/')[-1], hdr[0] if hdr else '')
    print(f"  span {span:.1f} us, SMs {len(sm)} teams/SM {dict(tpsm)}, SM active mean {sum(act)/len(act):.1f} min {min(act):.1f} -> idle {100*(1-sum(act)/len(act)/span):.1f} %")
    print(f"  team busy mean {busy/len(rows):.1f} us; team-slot idle {100*(1-busy/len(rows)/span):.1f} %; items/team {dict(items)}")
    print(f"  starts: max {starts[-1]:.2f} ; ends: min {ends[0]:.1f} p10 {ends[len(ends)//10]:.1f} p50 {ends[len(ends)//2]:.1f} p90 {ends[9*len(ends)//10]:.1f} max {ends[-1]:.1f}")
    # per-SM items and last end
    smi=sorted((sum(x[4] for x in v), (max(x[3] for x in v)-t0)/1e3) for v in sm.values())
    byitems=collections.defaultdict(list)
    for n,e in smi: byitems[n].append(e)
    print("  SM items -> count, mean last end:", {k:(len(v), round(sum(v)/len(v),1)) for k,v in sorted(byitems.items())})
    # rank order -> sm mapping for first 8 ranks
    print("  rank->sm first 12:", [r[1] for r in rows[:12]], " ranks 132..135:", [r[1] for r in rows[132:136]])
    # per-team time per item
    tpi=sorted((r[3]-r[2])/1e3/r[4] for r in rows if r[4])
    print(f"  us per item per team: min {tpi[0]:.2f} p50 {tpi[len(tpi)//2]:.2f} max {tpi[-1]:.2f}")
