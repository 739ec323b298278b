// gpufit's HTML report: draws a command's result (the data object of
// src/gpufit/report/html_report.h) with Apache ECharts, embedded in the same page. Every chart
// is an SVG (renderer 'svg'); window.gpufitReport tells a headless check what was drawn:
// { ready, sections: [{id, title, charts}], charts, errors }.
(function () {
  'use strict';
  const report = (window.gpufitReport = { ready: false, sections: [], charts: 0, errors: [] });
  const main = document.getElementById('report');
  const data = JSON.parse(document.getElementById('gpufit-data').textContent);
  const result = data.result || {};
  const series = data.series || null;
  const charts = [];

  // ---------- small helpers ----------
  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v;
      else if (k === 'class') e.className = v;
      else e.setAttribute(k, v);
    }
    for (const c of children || []) e.append(c);
    return e;
  }
  const num = (v) => typeof v === 'number' && isFinite(v);
  const usd = (v) => (num(v) ? '$' + Math.round(v).toLocaleString('en-US') : 'n/a');
  const pct = (v, digits) => (num(v) ? v.toFixed(digits === undefined ? 1 : digits) + '%' : 'n/a');
  const fixed = (v, d) => (num(v) ? v.toFixed(d) : '');
  const sum = (xs) => xs.reduce((a, b) => a + (num(b) ? b : 0), 0);
  const palette = ['#2a6fdb', '#e07b39', '#3aa676', '#c44e8a', '#8a6cd1', '#b8a12c', '#3aa6a6', '#d05a5a', '#6b8e23', '#7f7f7f'];

  function section(id, title, intro) {
    const body = el('div');
    const s = el('section', { id: 's-' + id, 'data-section': id }, [el('h2', { text: title })]);
    if (intro) s.append(el('p', { class: 'intro', text: intro }));
    s.append(body);
    main.append(s);
    report.sections.push({ id, title, charts: 0 });
    return body;
  }
  // Redraws (a selector's change) replace the option whole: animation stays off, so a
  // screenshot or a print never catches a half-drawn chart.
  function redraw(c, option) {
    c.setOption(Object.assign({ animation: false, color: palette }, option), true);
  }
  function chart(parent, option, cls) {
    const div = el('div', { class: 'chart' + (cls ? ' ' + cls : ''), 'data-chart': '1' });
    parent.append(div);
    const c = echarts.init(div, null, { renderer: 'svg' });
    c.setOption(Object.assign({ animation: false, color: palette }, option));
    charts.push(c);
    report.charts++;
    report.sections[report.sections.length - 1].charts++;
    return c;
  }
  function cards(parent, items) {
    const box = el('div', { class: 'cards' });
    for (const it of items)
      box.append(
        el('div', { class: 'card' }, [
          el('div', { class: 'label', text: it.label }),
          el('div', { class: 'value' + (it.tone ? ' ' + it.tone : ''), text: it.value }),
          el('div', { class: 'sub', text: it.sub || '' }),
        ])
      );
    parent.append(box);
  }
  // A sortable (click a header), filterable (the box above) table. columns: [{key, title, num, fmt}]
  function table(parent, columns, rows, placeholder) {
    const wrap = el('div');
    const filter = el('input', { type: 'search', placeholder: placeholder || 'filter rows', 'aria-label': 'filter' });
    const count = el('span', { class: 'note' });
    wrap.append(el('div', { class: 'controls' }, [filter, count]));
    const thead = el('tr');
    const tbody = el('tbody');
    const t = el('table', {}, [el('thead', {}, [thead]), tbody]);
    wrap.append(el('div', { class: 'table-wrap' }, [t]));
    let sortKey = null, sortDir = 1;
    columns.forEach((c) => {
      const th = el('th', { text: c.title, class: c.num ? 'num' : '' });
      th.addEventListener('click', () => {
        sortDir = sortKey === c.key ? -sortDir : c.num ? -1 : 1;
        sortKey = c.key;
        thead.querySelectorAll('th').forEach((h) => h.removeAttribute('aria-sort'));
        th.setAttribute('aria-sort', sortDir > 0 ? 'ascending' : 'descending');
        render();
      });
      thead.append(th);
    });
    function render() {
      const q = filter.value.trim().toLowerCase();
      let shown = rows.filter((r) => !q || columns.some((c) => String(r[c.key] ?? '').toLowerCase().includes(q)));
      if (sortKey) {
        shown = shown.slice().sort((a, b) => {
          const x = a[sortKey], y = b[sortKey];
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * sortDir;
        });
      }
      // At most kMaxRows rows in the page at once (a fleet has tens of thousands of pods): the
      // filter and the sort still run over all of them.
      const kMaxRows = 2000;
      const fragment = document.createDocumentFragment();
      for (const r of shown.slice(0, kMaxRows))
        fragment.append(el('tr', {}, columns.map((c) => el('td', { class: c.num ? 'num' : '', text: c.fmt ? c.fmt(r[c.key], r) : r[c.key] ?? '' }))));
      tbody.replaceChildren(fragment);
      count.textContent = shown.length + ' of ' + rows.length + ' rows' + (shown.length > kMaxRows ? ', the first ' + kMaxRows + ' shown (filter to narrow)' : '');
    }
    filter.addEventListener('input', render);
    render();
    parent.append(wrap);
    return wrap;
  }
  function tabs(parent, views) {
    const bar = el('div', { class: 'controls tabs' });
    const area = el('div');
    parent.append(bar, area);
    const buttons = views.map((v, i) => {
      const b = el('button', { type: 'button', 'aria-pressed': i === 0 ? 'true' : 'false', text: v.title });
      b.addEventListener('click', () => {
        buttons.forEach((x) => x.setAttribute('aria-pressed', 'false'));
        b.setAttribute('aria-pressed', 'true');
        area.replaceChildren();
        v.draw(area);
      });
      bar.append(b);
      return b;
    });
    views[0].draw(area);
  }

  // ---------- plan sections ----------
  function headline(summary) {
    const totals = result.totals || {};
    const body = section('headline', 'Headline', summary ? summary.basis : '');
    const items = [];
    if (summary && num(summary.usd_per_month_saved))
      items.push({
        label: 'Saving per month',
        value: usd(summary.usd_per_month_saved),
        sub: pct(summary.saved_pct) + ' of ' + usd(summary.usd_per_month_before),
        tone: summary.usd_per_month_saved > 0 ? 'good' : '',
      });
    if (summary)
      items.push({ label: 'USD per month', value: usd(summary.usd_per_month_before) + ' \u2192 ' + usd(summary.usd_per_month_after) });
    if (num(totals.gpus_before)) {
      // The saving counts the co-location only where its backtest held (summary.basis): a GPU
      // count the saving leaves out says so, or the two tiles read as a contradiction.
      const coloc = result.backtest && result.backtest.status && result.backtest.status.colocation;
      const counted = !coloc || coloc.status === 'held';
      items.push({
        label: counted ? 'GPUs' : 'GPUs if co-located (' + coloc.status + ')',
        value: totals.gpus_before + ' \u2192 ' + totals.gpus_after,
        sub: 'lower bound ' + totals.gpus_lower_bound + (result.target_gpu ? ', ' + result.target_gpu.id : '') +
            (counted ? '' : '; not in the saving until its backtest holds'),
      });
    }
    if (num(totals.mean_duty_pct_before))
      items.push({ label: 'Mean duty cycle', value: pct(totals.mean_duty_pct_before) + ' \u2192 ' + pct(totals.mean_duty_pct_after) });
    if (result.backtest) {
      // The co-location's own verdict (src/gpufit/backtest/status.h), as the summary says it.
      const status = result.backtest.status && result.backtest.status.colocation;
      const verdict = status ? status.status : result.backtest.safe ? 'held' : 'did not hold';
      items.push({
        label: 'Co-location on held-out data',
        value: verdict,
        tone: verdict === 'held'       ? 'good' :
            verdict === 'did not hold' ? 'bad' :
                                         '',
        sub: status ? status.why : result.backtest.method || '',
      });
    }
    cards(body, items);
    // The guarantee is stated here once (the Backtest section refers to it).
    if (result.backtest && result.backtest.guarantee)
      body.append(el('p', {class: 'guarantee', text: result.backtest.guarantee}));
    for (const [key, title] of [
             ['warnings', 'Warnings'], ['actions', 'Recommended'], ['provisional', 'Provisional'],
             ['not_recommended', 'Not recommended']]) {
      if (!summary || !summary[key] || !summary[key].length) continue;
      body.append(el('strong', {text: title}));
      body.append(el('ol', {class: 'actions'}, summary[key].map((a) => el('li', {text: a}))));
    }
  }

  function costByStrategy(summary) {
    const all = (summary && summary.strategies) || [];
    const rows = all.filter((r) => r.unit === 'usd_per_month' && num(r.usd_before) && num(r.usd_after));
    if (!rows.length) return;
    const body = section('cost', 'Cost by strategy', 'USD per month before and after each strategy priced per month (on-demand prices, 730-hour month).');
    body.append(el('ul', { class: 'note' }, all.map((r) =>
      el('li', { text: r.strategy + ': ' + usd(r.usd_saved) + ' saved ' + (r.unit === 'usd_per_run' ? 'per run' : 'per month') + ' (' + r.basis + ')' }))));
    chart(body, {
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      grid: { left: 220, right: 30, top: 30, bottom: 30 },
      xAxis: { type: 'value', name: 'USD / month', nameLocation: 'middle', nameGap: 24 },
      yAxis: { type: 'category', data: rows.map((r) => r.strategy), inverse: true },
      series: [
        { name: 'before', type: 'bar', data: rows.map((r) => Math.round(r.usd_before)) },
        { name: 'after', type: 'bar', data: rows.map((r) => Math.round(r.usd_after)) },
      ],
    }, rows.length > 4 ? 'tall' : '');
  }

  function gpuMemory() {
    const gpus = (series && series.gpu_memory) || [];
    if (!gpus.length) return;
    const body = section('gpu-memory', 'Shared GPUs: memory over time',
      'Each pod\u2019s GPU memory stacked (DCGM_FI_DEV_FB_USED), at each point the sample of its interval where the sum peaks; ' +
      'the solid red line is the GPU\u2019s memory, the dashed one what the packer filled to (the learned margin kept free). ' +
      'The groups drawn are the final plan\u2019s, fitted on the whole window. ' +
      (series.holdout ? 'The shaded part is the ' + series.holdout.label + '.' : ''));
    const select = el('select', { 'aria-label': 'GPU' }, gpus.map((g, i) =>
      el('option', { value: String(i), text: 'GPU ' + g.gpu + ': ' + g.pods.length + ' pods, peak ' + Math.round(g.peak_mib).toLocaleString('en-US') + ' MiB' })));
    body.append(el('div', { class: 'controls' }, [el('label', { text: 'GPU (fullest first) ' }), select,
      el('span', { class: 'note', text: gpus.length + ' shared GPUs' + (series.gpu_memory_omitted ? ', ' + series.gpu_memory_omitted + ' more not drawn' : '') })]));
    const c = chart(body, {}, 'tall');
    function draw(i) {
      const g = gpus[i];
      const stack = g.pods.map((p, k) => ({
        name: p, type: 'line', stack: 'mem', areaStyle: {}, showSymbol: false, lineStyle: { width: 0.5 },
        data: g.hours.map((h, j) => [h, g.mib[k][j]]),
      }));
      const lines = [{ yAxis: g.capacity_mib, name: 'GPU memory', lineStyle: { color: '#c23b22', width: 2, type: 'solid' } }];
      if (g.packing_capacity_mib < g.capacity_mib)
        lines.push({ yAxis: g.packing_capacity_mib, name: 'packed to', lineStyle: { color: '#c23b22', type: 'dashed' } });
      stack.push({
        name: 'limits', type: 'line', data: [], silent: true,
        markLine: { symbol: 'none', label: { formatter: '{b}' }, data: lines },
        markArea: series.holdout ? { silent: true, itemStyle: { color: 'rgba(42,111,219,0.08)' }, label: { show: true, position: 'insideTop', color: '#5b6576' },
          data: [[{ name: 'hold-out', xAxis: series.holdout.begin_h }, { xAxis: series.holdout.end_h }]] } : undefined,
      });
      redraw(c, {
        tooltip: { trigger: 'axis' },
        legend: { type: 'scroll', top: 0, data: g.pods },
        grid: { left: 70, right: 110, top: 40, bottom: 50 },
        xAxis: { type: 'value', name: 'hours from the window\u2019s start', nameLocation: 'middle', nameGap: 28, min: 0 },
        yAxis: { type: 'value', name: 'MiB', max: Math.ceil(Math.max(g.capacity_mib, g.peak_mib) * 1.05) },
        series: stack,
      });
    }
    select.addEventListener('change', () => draw(Number(select.value)));
    draw(0);
  }

  function dutyHeatmap() {
    const d = series && series.duty_by_hour;
    if (!d || !d.pods.length) return;
    const body = section('duty', 'Duty cycle by hour of day',
      'Mean GPU duty cycle of each pod per hour of day on the telemetry\u2019s clock (UTC for Unix times), over its life; blank where it had no sample. ' +
      'Pods busy at different hours can share a GPU without their compute colliding.' + (series.duty_pods_omitted ? ' ' + series.duty_pods_omitted + ' pods with the least GPU time not drawn.' : ''));
    const points = [];
    d.pct.forEach((row, y) => row.forEach((v, x) => { if (v !== null) points.push([x, y, v]); }));
    chart(body, {
      tooltip: { position: 'top', formatter: (p) => d.pods[p.value[1]] + ', ' + p.value[0] + ':00 \u2013 ' + p.value[2] + '%' },
      grid: { left: 220, right: 80, top: 10, bottom: 40 },
      xAxis: { type: 'category', data: d.hours.map((h) => String(h).padStart(2, '0')), name: 'hour', nameLocation: 'middle', nameGap: 26 },
      yAxis: { type: 'category', data: d.pods, axisLabel: { fontSize: 9, width: 200, overflow: 'truncate' } },
      visualMap: { min: 0, max: 100, calculable: true, orient: 'vertical', right: 0, top: 'center', formatter: '{value}%', inRange: { color: ['#f2f6fc', '#2a6fdb', '#10306b'] } },
      series: [{ type: 'heatmap', data: points, progressive: 0 }],
    }, d.pods.length > 40 ? 'tall' : '');
  }

  function rightSizing(summary) {
    const pods = result.pods || [];
    if (!pods.length) return;
    const body = section('rightsizing', 'Right-sizing', 'Each pod\u2019s memory need (peak \u00d7 (1 + headroom), plus the learned margin) and the cheapest catalog GPU that holds it alone; ' +
      'rolled up per workload and per namespace. Sort by a column header, filter with the box.');
    const podRows = pods.map((p) => ({
      pod: p.pod,
      workload: p.workload || (summary && summary.rollups && summary.rollups.workload_of ? summary.rollups.workload_of[p.pod] : ''),
      current: p.right_sizing ? p.right_sizing.current_gpu : '',
      recommended: p.right_sizing ? p.right_sizing.recommended_gpu : '',
      required_mib: p.right_sizing ? p.right_sizing.required_mib : null,
      peak_mib: p.profile ? p.profile.fb_used_mib.peak : null,
      duty_p95: p.profile ? p.profile.gpu_util_pct.p95 : null,
      idle: p.profile ? p.profile.idle_share * 100 : null,
      usd_now: p.right_sizing ? p.right_sizing.usd_per_month_current : null,
      usd_rec: p.right_sizing ? p.right_sizing.usd_per_month_recommended : null,
      group: p.group,
    }));
    const rollupColumns = [
      { key: 'key', title: 'name' }, { key: 'pods', title: 'pods', num: true }, { key: 'gpus_before', title: 'GPUs now', num: true },
      { key: 'gpus_shared', title: 'on shared GPUs', num: true },
      { key: 'peak_fb_used_mib', title: 'peak MiB', num: true, fmt: (v) => fixed(v, 0) },
      { key: 'mean_duty_pct', title: 'mean duty %', num: true, fmt: (v) => fixed(v, 1) },
      { key: 'gpu_hours_used', title: 'GPU-h used', num: true, fmt: (v) => fixed(v, 1) },
      { key: 'gpu_hours_allocated', title: 'GPU-h held', num: true, fmt: (v) => fixed(v, 1) },
      { key: 'usd_per_month_current', title: 'USD/mo now', num: true, fmt: usd },
      { key: 'usd_per_month_right_sized', title: 'USD/mo right-sized', num: true, fmt: usd },
    ];
    const views = [{
      title: 'Pods (' + podRows.length + ')',
      draw: (a) => table(a, [
        { key: 'pod', title: 'pod' }, { key: 'workload', title: 'workload' }, { key: 'current', title: 'GPU now' },
        { key: 'recommended', title: 'right-sized GPU' }, { key: 'required_mib', title: 'need MiB', num: true, fmt: (v) => fixed(v, 0) },
        { key: 'peak_mib', title: 'peak MiB', num: true, fmt: (v) => fixed(v, 0) }, { key: 'duty_p95', title: 'duty p95 %', num: true, fmt: (v) => fixed(v, 1) },
        { key: 'idle', title: 'idle %', num: true, fmt: (v) => fixed(v, 1) }, { key: 'usd_now', title: 'USD/mo now', num: true, fmt: usd },
        { key: 'usd_rec', title: 'USD/mo right-sized', num: true, fmt: usd }, { key: 'group', title: 'shared GPU', num: true },
      ], podRows, 'filter pods, GPUs, workloads'),
    }];
    const r = summary && summary.rollups;
    if (r && r.by_workload) views.push({ title: 'Workloads (' + r.by_workload.length + ')', draw: (a) => table(a, rollupColumns, r.by_workload) });
    if (r && r.by_namespace) views.push({ title: 'Namespaces (' + r.by_namespace.length + ')', draw: (a) => table(a, rollupColumns, r.by_namespace) });
    if (r && r.workload_basis) body.append(el('p', { class: 'note', text: 'Workloads: ' + r.workload_basis }));
    tabs(body, views);
  }

  function backtest() {
    const b = result.backtest;
    if (!b || !b.splits || !b.splits.length) return;
    const body = section(
        'backtest', 'Backtest on held-out telemetry',
        'The plan rebuilt on the earlier part of the window and replayed on the later part it never saw (docs/backtest.md); ' +
            'what that guarantees is stated in the headline.');
    const labels = b.splits.map((s) => s.split);
    const allowed =
        num(result.options && result.options.max_collision_share) ? result.options.max_collision_share * 100 : null;
    if (b.splits.length === 1) {
      // One split: no line between splits to draw. Each count is a bar labelled with its value
      // (a 0 reads "0", not an empty plot), and the worst GPU's collision share a bar beside
      // the allowed share.
      const s = b.splits[0];
      const worst = Number((s.colocation.max_collision_share * 100).toFixed(2));
      const counts = [
        ['memory overflow samples', s.colocation.overflow_samples],
        ['right-sized pods outgrown', (s.right_sizing.outgrown || []).length],
        ['GPUs over the collision limit', s.colocation.gpus_over_collision_limit || 0],
      ];
      if (s.lending && s.lending.planned)
        counts.push(['lending samples over capacity', s.lending.over_capacity_samples]);
      const shares = [{value: worst, itemStyle: {color: allowed !== null && worst > allowed ? '#c23b22' : '#1f8a4c'}}];
      if (allowed !== null) shares.push({value: Number(allowed.toFixed(2)), itemStyle: {color: '#7f7f7f'}});
      const label = (fmt) => ({show: true, position: 'right', formatter: (p) => fmt(p.value)});
      chart(
          body, {
            tooltip: {trigger: 'item'},
            title: [
              {text: 'on the hold-out of ' + s.split, left: 0, top: 0, textStyle: {fontSize: 12, fontWeight: 'normal'}},
              {text: 'worst GPU collision share', left: '62%', top: 0, textStyle: {fontSize: 12, fontWeight: 'normal'}},
            ],
            grid: [{left: 200, right: '44%', top: 30, bottom: 30}, {left: '70%', right: 60, top: 30, bottom: 30}],
            xAxis: [
              {type: 'value', gridIndex: 0, minInterval: 1, max: (v) => Math.max(1, Math.ceil(v.max * 1.25))},
              {type: 'value', gridIndex: 1, name: '%', max: (v) => Math.max(0.01, v.max * 1.3)},
            ],
            yAxis: [
              {type: 'category', gridIndex: 0, inverse: true, data: counts.map((c) => c[0])},
              {
                type: 'category',
                gridIndex: 1,
                inverse: true,
                data: allowed !== null ? ['worst GPU', 'allowed'] : ['worst GPU']
              },
            ],
            series: [
              {
                name: 'count',
                type: 'bar',
                xAxisIndex: 0,
                yAxisIndex: 0,
                barMaxWidth: 22,
                data: counts.map((c) => c[1]),
                label: label(String)
              },
              {
                name: 'collision share (%)',
                type: 'bar',
                xAxisIndex: 1,
                yAxisIndex: 1,
                barMaxWidth: 22,
                data: shares,
                label: label((v) => v + '%')
              },
            ],
          },
          'short');
    } else
      chart(
          body, {
            tooltip: {trigger: 'axis'},
            legend: {top: 0},
            grid: {left: 60, right: 60, top: 70, bottom: 60},
            xAxis: {type: 'category', data: labels, axisLabel: {rotate: labels.length > 6 ? 30 : 0}},
            yAxis: [
              {type: 'value', name: 'count', minInterval: 1}, {
                type: 'value',
                name: '% of samples',
                min: 0,
                splitLine: {show: false},
                max: allowed !== null ? (v) => Math.max(v.max, allowed) * 1.1 : undefined
              }
            ],
            series: [
              {name: 'memory overflow samples', type: 'bar', data: b.splits.map((s) => s.colocation.overflow_samples)},
              {
                name: 'right-sized pods outgrown',
                type: 'bar',
                data: b.splits.map((s) => (s.right_sizing.outgrown || []).length)
              },
              {
                name: 'GPUs over the collision limit',
                type: 'bar',
                data: b.splits.map((s) => s.colocation.gpus_over_collision_limit || 0)
              },
              {
                name: 'lending samples over capacity',
                type: 'bar',
                data: b.splits.map((s) => (s.lending ? s.lending.over_capacity_samples : 0))
              },
              {
                name: 'worst GPU collision share (%)',
                type: 'line',
                yAxisIndex: 1,
                showSymbol: true,
                data: b.splits.map((s) => Number((s.colocation.max_collision_share * 100).toFixed(2))),
                markLine: allowed !== null ? {
                  symbol: 'none',
                  label: {formatter: 'allowed'},
                  data: [{yAxis: allowed}],
                  lineStyle: {color: '#c23b22'}
                } :
                                             undefined
              },
            ],
          },
          'short');
    table(
        body,
        [
          {key: 'split', title: 'split'},
          {key: 'fit_hours', title: 'fit h', num: true, fmt: (v) => fixed(v, 1)},
          {key: 'test_hours', title: 'test h', num: true, fmt: (v) => fixed(v, 1)},
          {key: 'gpus', title: 'GPUs', num: true},
          {key: 'overflow', title: 'overflow samples', num: true},
          {key: 'worst', title: 'worst over MiB', num: true, fmt: (v) => fixed(v, 0)},
          {key: 'collision', title: 'worst collision %', num: true, fmt: (v) => fixed(v * 100, 2)},
          {key: 'over_limit', title: 'GPUs over collision limit', num: true},
          {key: 'outgrown', title: 'outgrown pods', num: true},
          {key: 'lending', title: 'lending over capacity', num: true},
          {key: 'safe', title: 'co-location safe'},
        ],
        b.splits.map((s) => ({
                       split: s.split,
                       fit_hours: s.fit_hours,
                       test_hours: s.test_hours,
                       gpus: s.gpus,
                       overflow: s.colocation.overflow_samples,
                       worst: s.colocation.worst_over_mib,
                       collision: s.colocation.max_collision_share,
                       over_limit: s.colocation.gpus_over_collision_limit,
                       outgrown: (s.right_sizing.outgrown || []).length,
                       lending: s.lending ? s.lending.over_capacity_samples : 0,
                       safe: s.planned_pods === 0 || s.shared_gpus === 0 ? 'not tested' :
                           s.safe                                        ? 'yes' :
                                                                           'NO'
                     })));
  }

  function mig(m) {
    if (!m || !m.assignments || !m.assignments.length) return;
    const byGpu = new Map();
    for (const a of m.assignments) {
      if (!byGpu.has(a.gpu)) byGpu.set(a.gpu, []);
      byGpu.get(a.gpu).push(a);
    }
    const slices = (p) => Number((/^(\d+)g\./.exec(p) || [0, 1])[1]);
    // GPUs with the same instances (largest first) share one bar: "n GPUs" of that layout.
    const layouts = new Map();
    for (const [gpu, list] of byGpu) {
      const profiles = list.map((a) => a.profile).sort((x, y) => slices(y) - slices(x) || (x < y ? -1 : 1));
      const key = profiles.join(' + ');
      if (!layouts.has(key)) layouts.set(key, { profiles, gpus: [], pods: [] });
      layouts.get(key).gpus.push(gpu);
      layouts.get(key).pods.push(...list.map((a) => a.pod));
    }
    const rows = [...layouts.values()].sort((x, y) => y.gpus.length - x.gpus.length);
    const body = section('mig', 'MIG layouts', 'One MIG instance per pod (hardware isolation) on ' + (result.target_gpu ? result.target_gpu.name : 'the target GPU') +
      ': ' + m.gpus + ' GPUs' + (num(m.usd_per_month) ? ', ' + usd(m.usd_per_month) + ' per month' : '') + ', in ' + rows.length +
      ' distinct layouts. Each bar is a layout and the GPUs that have it, each block an instance as wide as its compute slices (of 7); slices left blank are free.');
    const profiles = [...new Set(m.assignments.map((a) => a.profile))];
    const depth = Math.max(...rows.map((r) => r.profiles.length));
    const bars = [];
    for (let k = 0; k < depth; ++k)
      bars.push({
        type: 'bar', stack: 'gpu', barMaxWidth: 28, itemStyle: { borderColor: '#fff', borderWidth: 1 },
        label: { show: true, formatter: (p) => p.data.profile, fontSize: 10 },
        data: rows.map((r) => {
          const p = r.profiles[k];
          return p ? { value: slices(p), profile: p, itemStyle: { color: palette[profiles.indexOf(p) % palette.length] } } : { value: 0, profile: '' };
        }),
      });
    chart(body, {
      tooltip: { formatter: (p) => rows[p.dataIndex].gpus.length + ' GPUs: ' + rows[p.dataIndex].profiles.join(' + ') },
      grid: { left: 90, right: 20, top: 10, bottom: 40 },
      xAxis: { type: 'value', max: 7, name: 'compute slices', nameLocation: 'middle', nameGap: 26 },
      yAxis: { type: 'category', data: rows.map((r) => r.gpus.length + (r.gpus.length === 1 ? ' GPU' : ' GPUs')), inverse: true },
      series: bars,
    }, rows.length > 12 ? 'tall' : '');
  }

  function replicas(inference) {
    const services = (inference && inference.services) || [];
    if (!services.length) return;
    const body = section('replicas', 'Inference replicas against demand',
      'gpufit\u2019s replica schedule per decision window (step line) against the requests per second in each window (area), and the GPU-hours of each policy replayed on the same requests.');
    const select = el('select', { 'aria-label': 'service' }, services.map((s, i) => el('option', { value: String(i), text: s.name })));
    body.append(el('div', { class: 'controls' }, [el('label', { text: 'service ' }), select]));
    const c = chart(body, {});
    const p = chart(body, {}, 'short');
    function draw(i) {
      const s = services[i];
      const w = s.window_s || 60;
      const demand = (s.demand_requests_per_s || []).map((v, k) => [(k * w) / 3600, v]);
      const steps = [];
      for (const r of s.recommendation.schedule) { steps.push([r.from_s / 3600, r.replicas]); steps.push([r.to_s / 3600, r.replicas]); }
      redraw(c, {
        tooltip: { trigger: 'axis' },
        legend: { top: 0 },
        grid: { left: 60, right: 60, top: 40, bottom: 50 },
        xAxis: { type: 'value', name: 'hours from the trace\u2019s start', nameLocation: 'middle', nameGap: 28 },
        yAxis: [{ type: 'value', name: 'requests / s' }, { type: 'value', name: 'replicas', minInterval: 1, splitLine: { show: false } }],
        series: [
          { name: 'demand (requests/s)', type: 'line', areaStyle: { opacity: 0.3 }, showSymbol: false, data: demand },
          { name: 'replicas (gpufit)', type: 'line', yAxisIndex: 1, showSymbol: false, data: steps, lineStyle: { width: 2 } },
        ],
      });
      const pol = s.policies || [];
      redraw(p, {
        tooltip: { trigger: 'axis' },
        grid: { left: 160, right: 30, top: 10, bottom: 40 },
        xAxis: { type: 'value', name: 'GPU-hours', nameLocation: 'middle', nameGap: 24 },
        yAxis: { type: 'category', data: pol.map((x) => x.policy + ' (SLO ' + pct(x.slo_attainment * 100, 2) + ')'), inverse: true },
        series: [{ type: 'bar', data: pol.map((x) => Number(x.gpu_hours.toFixed(2))) }],
      });
    }
    select.addEventListener('change', () => draw(Number(select.value)));
    draw(0);
  }

  function training(t) {
    const jobs = (t && t.jobs) || [];
    if (!jobs.length) return;
    const body = section('training', 'Training: spot against on-demand',
      'Expected cost of each job\u2019s run on spot (checkpointing at the Young/Daly interval, reclaims at ' +
      (t.interruptions ? Number(t.interruptions.spot_per_hour).toPrecision(2) + ' per node-hour' : 'the stated rate') + ') and on on-demand, and what gpufit recommends. ' +
      'Total: ' + usd(t.totals.expected_on_demand_cost_usd) + ' on-demand, ' + usd(t.totals.expected_recommended_cost_usd) + ' as recommended.');
    chart(body, {
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      grid: { left: 200, right: 30, top: 30, bottom: 40 },
      xAxis: { type: 'value', name: 'USD per run', nameLocation: 'middle', nameGap: 24 },
      yAxis: { type: 'category', data: jobs.map((j) => j.job + ' \u2192 ' + j.recommendation), inverse: true },
      series: [
        { name: 'on-demand', type: 'bar', data: jobs.map((j) => Math.round(j.on_demand.expected_cost_usd || 0)) },
        { name: 'spot', type: 'bar', data: jobs.map((j) => Math.round(j.spot.expected_cost_usd || 0)) },
      ],
    }, jobs.length > 6 ? 'tall' : '');
  }

  function lending(tm) {
    if (!tm || !tm.gpus_needed_by_hour_utc) return;
    const body = section('lending', 'Day and night: lending idle GPUs to training',
      (tm.evidence || '') + ' Fleet: ' + tm.fleet_gpus + ' GPUs; lent at night: ' + (tm.gpus_lent || 0) + '.');
    const hours = tm.gpus_needed_by_hour_utc.map((_, h) => String(h).padStart(2, '0'));
    // An hour with no sample is null in the data: a shaded gap labelled "no data", never a 0.
    const gaps = [];
    tm.gpus_needed_by_hour_utc.forEach((v, h) => {
      if (v === null || v === undefined) gaps.push([{name: 'no data', xAxis: hours[h]}, {xAxis: hours[h]}]);
    });
    if (gaps.length)
      body.append(el('p', {class: 'note', text: gaps.length + ' hour(s) had no sample: shaded, no bar (not 0 GPUs).'}));
    chart(
        body, {
          tooltip: {
            trigger: 'axis',
            formatter: (ps) =>
                ps.map(
                      (p) => p.seriesName + ': ' +
                          (p.value === null || p.value === undefined || p.value === '-' ? 'no data' : p.value))
                    .join('<br>')
          },
          legend: {top: 0},
          grid: {left: 60, right: 30, top: 40, bottom: 40},
          xAxis: {type: 'category', data: hours, name: 'hour (UTC)', nameLocation: 'middle', nameGap: 26},
          yAxis: {type: 'value', name: 'GPUs'},
          series: [
            {
              name: 'GPUs the services need',
              type: 'bar',
              data: tm.gpus_needed_by_hour_utc,
              markArea: gaps.length ? {
                silent: true,
                itemStyle: {color: 'rgba(91,101,118,0.12)'},
                label: {show: true, position: 'insideTop', color: '#5b6576', fontSize: 9},
                data: gaps
              } :
                                      undefined
            },
            {name: 'fleet', type: 'line', showSymbol: false, data: hours.map(() => tm.fleet_gpus)},
          ],
        },
        'short');
  }

  function ancillaryTable(a) {
    const rows = (a && a.containers) || [];
    if (!rows.length) return;
    const body = section('containers', 'Containers: CPU and memory requests',
      'Per container (sidecars and agents included) the request from its usage, largest saving first; ' + usd(a.containers_usd_per_month_saving) + ' per month in all.');
    table(body, [
      { key: 'pod', title: 'pod' }, { key: 'container', title: 'container' }, { key: 'kind', title: 'kind' },
      { key: 'cpu_now', title: 'CPU now m', num: true }, { key: 'cpu_rec', title: 'CPU rec. m', num: true },
      { key: 'mem_now', title: 'memory now MiB', num: true }, { key: 'mem_rec', title: 'memory rec. MiB', num: true },
      { key: 'saving', title: 'USD/mo saved', num: true, fmt: usd },
    ], rows.map((c) => ({ pod: c.pod, container: c.container, kind: c.kind, cpu_now: c.now.cpu_request_m, cpu_rec: c.recommended.cpu_request_m,
      mem_now: c.now.memory_request_mib, mem_rec: c.recommended.memory_request_mib, saving: c.usd_per_month_saving })));
  }

  // ---------- other commands ----------
  function simulate() {
    const pols = result.policies || [];
    const body = section('simulate', 'Placement policies', 'Mean over ' + (result.seeds || []).length + ' seed(s) on ' + result.nodes + ' nodes (' + result.gpus +
      ' GPUs), ' + result.mode + ' mode: GPU allocation ratio and unallocated GPUs when the cluster stops accepting pods.');
    chart(body, {
      legend: { top: 0 },
      grid: { left: 130, right: 60, top: 40, bottom: 40 },
      xAxis: [{ type: 'value', name: 'GPU allocation ratio', nameLocation: 'middle', nameGap: 24, min: 0, max: 1 }],
      yAxis: { type: 'category', data: pols.map((p) => p.policy), inverse: true },
      series: [{ name: 'GPU allocation ratio (mean; \u00b1 sd in the tooltip)', type: 'bar',
        data: pols.map((p) => ({ value: Number(p.alloc_ratio_mean.toFixed(4)), sd: p.alloc_ratio_sd })) }],
      tooltip: { trigger: 'item', formatter: (p) => p.name + ': ' + p.value + ' \u00b1 ' + fixed(p.data.sd, 4) },
    });
    chart(body, {
      tooltip: { trigger: 'axis' },
      grid: { left: 130, right: 60, top: 10, bottom: 40 },
      xAxis: { type: 'value', name: 'unallocated GPUs', nameLocation: 'middle', nameGap: 24 },
      yAxis: { type: 'category', data: pols.map((p) => p.policy), inverse: true },
      series: [{ name: 'unallocated GPUs', type: 'bar', data: pols.map((p) => Number(p.unallocated_gpus_mean.toFixed(1))) }],
    }, 'short');
  }

  function trainingStudy() {
    const rows = result.rows || [];
    const body = section('study', 'Spot study: cost against all on-demand',
      'Simulated cost of gpufit\u2019s per-job decision (spot, spot with a deadline switch, on-demand) as a share of running every job on on-demand, per interruption rate.');
    const labels = rows.map((r) => r.market + ' (' + Number(r.interruptions_per_node_hour).toPrecision(2) + ' per node-hour)');
    chart(body, {
      tooltip: { trigger: 'axis' },
      legend: { top: 0 },
      grid: { left: 60, right: 60, top: 40, bottom: labels.length > 4 ? 90 : 40 },
      xAxis: { type: 'category', data: labels, axisLabel: { rotate: labels.length > 4 ? 30 : 0 } },
      yAxis: [{ type: 'value', name: 'USD' }, { type: 'value', name: 'cost ratio', min: 0, max: 1.2, splitLine: { show: false } }],
      series: [
        { name: 'recommended', type: 'bar', data: rows.map((r) => Math.round(r.recommended.cost_usd)) },
        { name: 'all on-demand', type: 'bar', data: rows.map((r) => Math.round(r.all_on_demand.cost_usd)) },
        { name: 'cost ratio', type: 'line', yAxisIndex: 1, data: rows.map((r) => Number(r.cost_ratio.toFixed(3))) },
      ],
    });
  }

  // ---------- the page ----------
  function draw() {
    main.replaceChildren(el('h1', { text: data.title || 'gpufit' }),
      el('p', { class: 'meta', text: (data.source ? 'Source: ' + data.source + ' \u00b7 ' : '') + (data.gpufit_version || '') }));
    const command = data.command;
    if (command === 'plan' || command === 'demo') {
      const summary = result.summary || null;
      if (result.totals || summary) headline(summary);
      costByStrategy(summary);
      backtest();
      gpuMemory();
      dutyHeatmap();
      rightSizing(summary);
      mig(result.mig_isolation);
      replicas(result.inference || (result.services ? result : null));
      training(result.training || (result.jobs ? result : null));
      lending(result.ancillary && result.ancillary.time_multiplexing);
      ancillaryTable(result.ancillary);
    } else if (command === 'inference') {
      replicas(result);
    } else if (command === 'simulate') {
      simulate();
    } else if (command === 'training study') {
      trainingStudy();
    }
    if (!report.sections.length) section('empty', 'Nothing to draw', 'This result has no section the report knows.');
  }

  try {
    draw();
  } catch (e) {
    report.errors.push(String(e && e.stack ? e.stack : e));
    console.error(e);
  }
  window.addEventListener('resize', () => charts.forEach((c) => c.resize()));
  report.ready = true;
})();
