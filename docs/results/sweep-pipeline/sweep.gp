# clusterpipe compare --sweep: redraw with `gnuplot sweep.gp`
if (!exists('suffix')) suffix = ''
$twemproxy << EOD
 1 14 23.5 12.4937 49.3937 35087.9 2269.18 16 ?
 2 9 12.5 5.59524 27.0952 58101.4 2027.52 16 ?
 5 6.5 8.4 3.04342 17.9434 81176.8 3842.05 16 ?
 10 3.5 4.6 1.44095 9.64095 149260 4055.04 16 ?
 20 2.7 3.5 1.00165 7.20165 217959 4341.76 16 ?
 50 2 3.1 0.53709 5.73709 266354 5881.86 16 ?
EOD
$cluster << EOD
 1 11.8 0 10.2862 21.3935 74147.7 4038.66 40 38091.2
 2 5.1 0 4.57729 9.67729 177266 3104.77 40 38346.8
 5 3.2 0 2.11185 5.23223 303209 4210.69 40 38346.8
 10 2.4 0 1.28392 3.70812 451344 4833.28 40 38091.2
 20 2 0 0.72679 2.8085 582130 8486.91 40 38091.2
 50 1.8 0 0.46301 2.26301 677974 9076.74 40 38091.2
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
set xlabel 'pipeline'
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
set xlabel 'pipeline'
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
set terminal svg size 900,560 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'sweep_cpu.svg'.suffix
reset
set datafile missing '?'
set grid
set key top right
set xlabel 'pipeline'
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
set xlabel 'pipeline'
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
