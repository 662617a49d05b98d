(function(){
 /* the page's figures (Vega-Lite specifications, drawn by vega-embed, offline) and its search */
 var views=[];
 function setAll(name,value){views.forEach(function(v){try{v.signal(name,value).runAsync()}catch(e){/* a figure without this parameter */}})}
 function picked(){return Array.prototype.map.call(document.querySelectorAll('input.pick:checked'),function(b){return b.getAttribute('data-judge')})}
 var pending=[];
 document.querySelectorAll('div.vega').forEach(function(el){
  var spec=JSON.parse(document.getElementById(el.id+'-spec').textContent);
  if(typeof vegaEmbed==='undefined'){return}
  pending.push(vegaEmbed(el,spec,{renderer:'svg',actions:{export:true,source:false,compiled:false,editor:false}}).then(function(r){views.push(r.view);el.setAttribute('data-ready','1')}).catch(function(e){el.textContent='This figure could not be drawn: '+e;console.error(e)}));
 });
 Promise.all(pending).then(function(){document.body.setAttribute('data-figures-ready','1');var p=picked();if(p.length)setAll('picked',p)});
 var box=document.getElementById('judge-search'),count=document.getElementById('search-count');
 function search(){
  var q=box.value.trim().toLowerCase(),n=0,seen={};
  document.querySelectorAll('tr[data-judge]').forEach(function(tr){var j=tr.getAttribute('data-judge'),hit=!q||j.toLowerCase().indexOf(q)>=0;tr.classList.toggle('hidden',!hit);if(hit&&q&&!seen[j]){seen[j]=1;n++}});
  document.querySelectorAll('table.collapsed').forEach(function(t){t.classList.toggle('searching',!!q)});
  count.textContent=q?(n+' judge'+(n===1?'':'s')+' found'):'';
  setAll('search',q);
 }
 if(box){box.addEventListener('input',search)}
 var mbox=document.getElementById('model-search'),mcount=document.getElementById('model-count');
 function findModel(){
  var q=mbox.value.trim().toLowerCase(),n=0,seen={};
  document.querySelectorAll('tr[data-model]').forEach(function(tr){var m=tr.getAttribute('data-model'),hit=!!q&&m.toLowerCase().indexOf(q)>=0;tr.classList.toggle('found',hit);if(hit&&!seen[m]){seen[m]=1;n++}});
  mcount.textContent=q?(n+' model'+(n===1?'':'s')+' found'):'';
  setAll('model_search',q);
 }
 if(mbox){mbox.addEventListener('input',findModel)}
 document.querySelectorAll('button.show-all').forEach(function(b){b.addEventListener('click',function(){var t=b.previousElementSibling.querySelector('table');var open=t.classList.toggle('collapsed');b.textContent=open?b.getAttribute('data-more'):'Show the first rows only'});b.setAttribute('data-more',b.textContent)});
 document.querySelectorAll('input.pick').forEach(function(b){b.addEventListener('change',function(){setAll('picked',picked())})});
})();
