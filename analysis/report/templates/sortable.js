document.querySelectorAll('table.sortable th').forEach(function(th){th.addEventListener('click',function(){
 var t=th.closest('table'),b=t.tBodies[0],i=Array.prototype.indexOf.call(th.parentNode.children,th);
 var asc=th.getAttribute('data-asc')!=='1';th.parentNode.querySelectorAll('th').forEach(function(h){h.removeAttribute('data-asc')});
 th.setAttribute('data-asc',asc?'1':'0');
 var rows=Array.prototype.slice.call(b.rows);
 function key(r){var c=r.cells[i];var v=c.getAttribute('data-v');if(v===null)v=c.textContent;var n=parseFloat(v);return isNaN(n)?v.toLowerCase():n}
 rows.sort(function(x,y){var a=key(x),c=key(y);if(typeof a!==typeof c){a=String(a);c=String(c)}return (a<c?-1:a>c?1:0)*(asc?1:-1)});
 rows.forEach(function(r){b.appendChild(r)});});});
