# clusterpipe compare --sweep: redraw with `gnuplot sweep.gp`
if (!exists('suffix')) suffix = ''
$twemproxy << EOD
 10 4.5 5.9 2.16002 12.46 130627 3055.62 16 ?
 100 2.3 4.9 1.84214 9.28117 183589 10518.5 16 ?
 1000 1.8 7.4 2.22807 11.4281 123726 115081 16 ?
 3000 2.2 10.8 3.22793 16.2279 99080.8 324010 16 ?
EOD
$cluster << EOD
 10 2.7 0 1.0414 3.79202 526821 1904.64 40 38091.2
 100 2.8 0 1.27999 4.04764 479567 18284.5 400 38039.2
 1000 3.3 0 2.54814 5.78299 256933 242745 4000 38090
 3000 5.9 0 4.32647 10.2601 141055 460325 12000 18876.7
EOD
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,560 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,560 background rgb 'white' noenhanced
}
set output 'sweep_cpu.png'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'clients'
set logscale x
set title 'CPU microseconds per GET by component (lower is better)'
set ylabel 'CPU-us per op'
set yrange [0:*]
plot $twemproxy using 1:5 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy total', \
     '' using 1:2 with linespoints dt 2 lc rgb '#e41a1c' pt 7 title 'twemproxy: redis', \
     '' using 1:3 with linespoints dt 2 lc rgb '#ff7f00' pt 7 title 'twemproxy: nutcracker', \
     '' using 1:4 with linespoints dt 2 lc rgb '#377eb8' pt 7 title 'twemproxy: client', \
     $cluster using 1:5 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster total', \
     '' using 1:2 with linespoints dt 3 lc rgb '#e41a1c' pt 5 title 'cluster: redis', \
     '' using 1:4 with linespoints dt 3 lc rgb '#377eb8' pt 5 title 'cluster: client'
unset output
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 1000,520 background rgb 'white' noenhanced
}
set output 'sweep_perf.png'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'clients'
set logscale x
set multiplot layout 1,2 title 'Throughput and p99 latency'
set title 'throughput (higher is better)'
set ylabel 'ops/s'
set yrange [0:*]
plot $twemproxy using 1:6 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:6 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
set title 'p99 latency (lower is better)'
set ylabel 'us'
set logscale y
set yrange [*:*]
plot $twemproxy using 1:7 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:7 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
unset multiplot
unset output
if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 1000,520 background rgb 'white' noenhanced
}
set output 'sweep_connections.png'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'clients'
set logscale x
set multiplot layout 1,2 title 'What the redis servers hold, all clients connected'
set title 'client connections, all redis servers together'
set ylabel 'connections'
set yrange [0:*]
plot $twemproxy using 1:8 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:8 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
set title 'memory per connection (used_memory grown / connections added)'
set ylabel 'bytes'
set yrange [0:*]
plot $twemproxy using 1:9 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:9 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
unset multiplot
unset output
set terminal svg size 900,560 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'sweep_cpu.svg'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'clients'
set logscale x
set title 'CPU microseconds per GET by component (lower is better)'
set ylabel 'CPU-us per op'
set yrange [0:*]
plot $twemproxy using 1:5 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy total', \
     '' using 1:2 with linespoints dt 2 lc rgb '#e41a1c' pt 7 title 'twemproxy: redis', \
     '' using 1:3 with linespoints dt 2 lc rgb '#ff7f00' pt 7 title 'twemproxy: nutcracker', \
     '' using 1:4 with linespoints dt 2 lc rgb '#377eb8' pt 7 title 'twemproxy: client', \
     $cluster using 1:5 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster total', \
     '' using 1:2 with linespoints dt 3 lc rgb '#e41a1c' pt 5 title 'cluster: redis', \
     '' using 1:4 with linespoints dt 3 lc rgb '#377eb8' pt 5 title 'cluster: client'
unset output
set terminal svg size 1000,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'sweep_perf.svg'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'clients'
set logscale x
set multiplot layout 1,2 title 'Throughput and p99 latency'
set title 'throughput (higher is better)'
set ylabel 'ops/s'
set yrange [0:*]
plot $twemproxy using 1:6 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:6 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
set title 'p99 latency (lower is better)'
set ylabel 'us'
set logscale y
set yrange [*:*]
plot $twemproxy using 1:7 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:7 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
unset multiplot
unset output
set terminal svg size 1000,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'sweep_connections.svg'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'clients'
set logscale x
set multiplot layout 1,2 title 'What the redis servers hold, all clients connected'
set title 'client connections, all redis servers together'
set ylabel 'connections'
set yrange [0:*]
plot $twemproxy using 1:8 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:8 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
set title 'memory per connection (used_memory grown / connections added)'
set ylabel 'bytes'
set yrange [0:*]
plot $twemproxy using 1:9 with linespoints lw 2 lc rgb '#d95f02' pt 7 title 'twemproxy', \
     $cluster using 1:9 with linespoints lw 2 lc rgb '#1b9e77' pt 5 title 'cluster'
unset multiplot
unset output
