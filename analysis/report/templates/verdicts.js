(function(){
 /* the verdict viewer: #judge=NAME shows one judge (&task=TASK: its pairs on one task; #judge=A&judge=B: two judges' pairs), the search box filters, pages of page_size */
 var cfg=JSON.parse(document.getElementById('viewer-config').textContent),size=cfg.page_size,page=0,judges=[],task=null;
 var pairs=Array.prototype.slice.call(document.querySelectorAll('article.pair'));
 var box=document.getElementById('pair-search'),count=document.getElementById('pair-count'),of=document.getElementById('page-of');
 var label=document.getElementById('judge-filter'),none=document.getElementById('none-found');
 function params(h,k){var re=new RegExp('(?:^|&)'+k+'=([^&]*)','g'),m,o=[];while((m=re.exec(h))!==null){try{o.push(decodeURIComponent(m[1]))}catch(e){}}return o}
 function fromHash(){
  var h=location.hash.replace(/^#/,'');
  judges=params(h,'judge');task=params(h,'task')[0];if(task===undefined)task=null;
  var said=[];
  if(judges.length)said.push((judges.length>1?'judges: ':'judge: ')+judges.map(function(j){return j+(cfg.judges.indexOf(j)<0?' (no pair judged in both orders)':'')}).join(', '));
  if(task!==null)said.push('task: '+task);
  label.textContent=said.join(', ');
  page=0;show();
 }
 function matches(){
  var q=box.value.trim().toLowerCase();
  return pairs.filter(function(a){return (!judges.length||judges.indexOf(a.getAttribute('data-judge'))>=0)&&(task===null||a.getAttribute('data-task')===task)&&(!q||a.getAttribute('data-search').indexOf(q)>=0)});
 }
 function counted(hit){
  /* a list-wise series is one instance in each of its orders, not a pair: each counted as what it is */
  var series=hit.filter(function(a){return a.classList.contains('list')}).length,n=hit.length-series,said=[];
  if(n||!series)said.push(n+' pair'+(n===1?'':'s'));
  if(series)said.push(series+' series');
  return said.join(', ');
 }
 function show(){
  var hit=matches(),pages=Math.max(1,Math.ceil(hit.length/size));
  if(page>=pages)page=pages-1;
  pairs.forEach(function(a){a.classList.add('hidden')});
  hit.slice(page*size,(page+1)*size).forEach(function(a){a.classList.remove('hidden')});
  count.textContent=counted(hit);
  of.textContent='page '+(page+1)+' of '+pages;
  document.getElementById('prev').disabled=page===0;document.getElementById('next').disabled=page>=pages-1;
  none.hidden=hit.length>0||pairs.length===0;
  document.body.setAttribute('data-viewer-ready','1');
 }
 document.getElementById('prev').addEventListener('click',function(){if(page>0){page--;show();window.scrollTo(0,0)}});
 document.getElementById('next').addEventListener('click',function(){page++;show();window.scrollTo(0,0)});
 document.getElementById('all-judges').addEventListener('click',function(e){e.preventDefault();history.replaceState(null,'',location.pathname);fromHash()});
 box.addEventListener('input',function(){page=0;show()});
 window.addEventListener('hashchange',fromHash);
 fromHash();
})();
