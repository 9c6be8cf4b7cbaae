// pushgate web UI: the only script. Reading works without it; it sends
// deletes (with a confirmation first) and reports their outcome.
'use strict';
(function () {
  var base = document.body.getAttribute('data-base') || '';

  function notice(text, isError) {
    var el = document.getElementById('notice');
    el.textContent = text;
    el.className = isError ? 'notice error' : 'notice';
    el.hidden = false;
  }

  // send makes a request and resolves with the response, or rejects with
  // the server's one-line reason.
  function send(method, url) {
    return fetch(url, { method: method, credentials: 'same-origin', headers: { Accept: 'application/json' } })
      .then(function (resp) {
        if (resp.ok) { return resp; }
        return resp.text().then(function (body) {
          var reason = body.trim();
          try { reason = JSON.parse(body).error || reason; } catch (e) { /* plain text */ }
          throw new Error(method + ' failed: ' + resp.status + ' ' + reason);
        });
      });
  }

  function fail(err) { notice(err.message, true); }

  var actions = {
    // Delete one group through the push API's DELETE, by an @base64 path.
    'delete-group': function (btn) {
      if (!window.confirm('Delete the group ' + btn.getAttribute('data-key') + ' and all its metrics?')) { return; }
      btn.disabled = true;
      send('DELETE', base + '/' + btn.getAttribute('data-path')).then(function () {
        window.location.assign(base + '/?deleted=1');
      }, function (err) { btn.disabled = false; fail(err); });
    },
    // Delete every group: the admin API's wipe.
    'wipe': function (btn) {
      if (!window.confirm('Delete all ' + btn.getAttribute('data-count') + ' groups? This cannot be undone.')) { return; }
      btn.disabled = true;
      send('PUT', base + '/api/v1/admin/wipe').then(function () {
        window.location.reload();
      }, function (err) { btn.disabled = false; fail(err); });
    },
    // Delete the stale groups matching the filter: a dry run first, so the
    // confirmation names the groups that would go now.
    'delete-stale': function (btn) {
      var url = base + '/api/v1/admin/groups?' + btn.getAttribute('data-query');
      btn.disabled = true;
      send('DELETE', url + '&dry_run=true').then(function (resp) { return resp.json(); }).then(function (body) {
        var groups = body.data.groups;
        if (groups.length === 0) { btn.disabled = false; notice('No stale group left to delete.'); return null; }
        var names = groups.slice(0, 5).map(function (g) {
          return Object.keys(g.labels).sort().map(function (k) { return k + '="' + g.labels[k] + '"'; }).join(',');
        });
        var more = groups.length > 5 ? '\n… and ' + (groups.length - 5) + ' more' : '';
        if (!window.confirm('Delete these ' + groups.length + ' stale groups?\n\n{' + names.join('}\n{') + '}' + more)) {
          btn.disabled = false;
          return null;
        }
        return send('DELETE', url).then(function (resp) { return resp.json(); }).then(function (res) {
          notice('Deleted ' + res.data.deleted + ' groups.');
          window.setTimeout(function () { window.location.reload(); }, 800);
        });
      }).catch(function (err) { btn.disabled = false; fail(err); });
    }
  };

  document.addEventListener('click', function (ev) {
    var btn = ev.target.closest('button[data-action]');
    if (!btn || !actions[btn.getAttribute('data-action')]) { return; }
    ev.preventDefault();
    actions[btn.getAttribute('data-action')](btn);
  });

  if (/[?&]deleted=1/.test(window.location.search)) {
    notice('Group deleted.');
  }
})();
