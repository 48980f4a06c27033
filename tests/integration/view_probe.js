// Injected by check_views.sh into a copy of a view page (never part of a view): after the load
// event, hovers points as a person would (Plotly.Fx.hover) and writes the hover labels' text into
// #view-probe: the loss chart's last val-loss point, the gradient heatmap's cell (BLOCK, the last
// step; in a sweep view the first run's), and for a sweep view, how many traces of other runs stay visible once one run is picked
// (traces of no run, the one-run-at-a-time heatmaps, have no legendgroup and are not counted).
window.addEventListener('load', function () {
  setTimeout(function () {
    var out = document.createElement('div');
    out.id = 'view-probe';
    var gds = document.querySelectorAll('.plotly-graph-div');
    function hoverText(gd, where) {
      Plotly.Fx.hover(gd, where);
      var t = gd.querySelector('.hoverlayer .hovertext');
      return t ? t.textContent : '';
    }
    try {
      var loss = gds[0], i = Math.max(0, loss.data.findIndex(function (t) { return /val loss/.test(t.name); }));
      var n = loss.data[i].x.length;
      out.setAttribute('data-loss', hoverText(loss, [{curveNumber: i, pointNumber: n - 1}]));
      var picker = document.getElementById('run-picker');
      if (picker) {
        var boxes = picker.querySelectorAll('input'), keep = boxes[0].value;
        boxes.forEach(function (b) { b.checked = b.value === keep; });
        pickRuns();
        var others = 0, kept = 0;
        gds.forEach(function (gd) {
          gd.data.forEach(function (t) {
            if (t.visible === true && t.legendgroup && t.legendgroup !== keep) others++;
            if (t.visible === true && t.legendgroup === keep) kept++;
          });
        });
        out.setAttribute('data-picked', keep + ' ' + kept + ' ' + others);
      }
      // A run's view: its heatmap is the second chart; a sweep's: the last, its first run shown.
      var heat = picker ? gds[gds.length - 1] : gds[1], h = heat.data[0], block = BLOCK;
      out.setAttribute('data-grad', hoverText(heat, {xval: h.x[h.x.length - 1], yval: block}));
    } catch (e) {
      out.setAttribute('data-error', String(e));
    }
    document.body.appendChild(out);
  }, 50);
});
