# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "GET" 1.39 2.7 1.80412 5.89412
"twemproxy" "pipelined GET" 0.45 0.66 0.255915 1.36592
"cluster" "GET" 1.54 0 1.21124 2.75124
"cluster" "pipelined GET" 0.34 0 0.161296 0.501296
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "GET" 16124.2 13306.4 17571.1 4964.35 4055.04 8110.08 14245634
"twemproxy" "pipelined GET" 68846.5 53964 76057.9 8552.45 4931.58 24838.1 14245634
"cluster" "GET" 35293 30244.7 36813.6 13598.7 12353.5 16973.8 1810039
"cluster" "pipelined GET" 177322 141556 183591 25362.4 22216.7 26673.2 1810039
EOD

$lat0 << EOD
-0 33.955
0.25 345.088
0.5 463.872
0.75 595.968
1 813.056
1.25 1331.2
1.5 2629.63
1.75 3874.82
2 4964.35
2.25 7716.86
2.5 10846.2
2.75 14188.5
3 17629.2
3.25 20906
3.5 23265.3
3.75 37879.8
4 38142
4.25 40763.4
4.5 40763.4
4.75 40763.4
5 40763.4
EOD
$lat1 << EOD
-0 74.594
0.25 886.784
0.5 1126.4
0.75 1413.12
1 1978.37
1.25 3514.37
1.5 4898.82
1.75 6471.68
2 8552.45
2.25 11763.7
2.5 16351.2
2.75 21561.3
3 23920.6
3.25 40763.4
3.5 48889.9
3.75 50199.2
4 50199.2
4.25 50199.2
4.5 50199.2
4.75 50199.2
5 50199.2
EOD
$lat2 << EOD
-0 12.361
0.25 164.352
0.5 706.56
0.75 1560.58
1 2564.1
1.25 4276.22
1.5 6537.22
1.75 9142.27
2 12353.5
2.25 16351.2
2.5 20512.8
2.75 26411
3 34209.8
3.25 42336.3
3.5 48365.6
3.75 54657
4 54657
4.25 57540.6
4.5 57802.8
4.75 57802.8
5 57802.8
EOD
$lat3 << EOD
-0 42.11
0.25 400.384
0.5 1142.78
0.75 2793.47
1 5423.1
1.25 8486.91
1.5 12484.6
1.75 18284.5
2 26673.2
2.25 35782.7
2.5 44433.4
2.75 53084.2
3 53608.4
3.25 69468.2
3.5 69992.4
3.75 69992.4
4 69992.4
4.25 70348.5
4.5 70348.5
4.75 70348.5
5 70348.5
EOD

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'cpu.png'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 1000,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 1000,520 background rgb 'white' noenhanced
}
set output 'throughput_p99.png'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:3.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {
    set terminal pngcairo size 900,520 background rgb 'white' font 'sans,10' noenhanced
} else {
    set terminal png size 900,520 background rgb 'white' noenhanced
}
set output 'latency.png'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:5]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy GET', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 2 title 'twemproxy pipelined GET', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster GET', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 2 title 'cluster pipelined GET'
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'cpu.svg'.suffix
reset
set datafile missing '?'
set title 'CPU-seconds by component per case (lower is better)'
set ylabel 'CPU-seconds (user + system)'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.6
set yrange [0:*]
set offsets 0, 0, graph 0.12, 0
set grid ytics
set bmargin 4
set key top right
plot $cpu using 3:xtic(strcol(1)."\n".strcol(2)) title 'redis-server' lc rgb '#e41a1c', \
     '' using 4 title 'twemproxy' lc rgb '#ff7f00', \
     '' using 5 title 'client (clusterpipe)' lc rgb '#377eb8', \
     '' using 0:6:(sprintf('%.2f', $6)) with labels offset 0,0.8 notitle
unset output

set terminal svg size 1000,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'throughput_p99.svg'.suffix
reset
set datafile missing '?'
set multiplot layout 1,2 title 'Throughput and p99 latency per case (bars: min-max over repeats)'
set style fill solid 0.85 border -1
set boxwidth 0.6
set xrange [-0.6:3.6]
set yrange [0:*]
set grid ytics
set bmargin 4
set title 'throughput, ops/s (higher is better)'
plot $perf using 0:3:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:3:4:5 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
set title 'p99 latency, us (lower is better)'
plot $perf using 0:6:9:xtic(strcol(1)."\n".strcol(2)) with boxes lc rgb variable notitle, \
     '' using 0:6:7:8 with yerrorbars lc rgb 'black' pt 7 ps 0.5 notitle
unset multiplot
unset output

set terminal svg size 900,520 dynamic background rgb 'white' font 'sans,11' noenhanced
set output 'latency.svg'.suffix
reset
set title 'Latency by percentile (median run of each case)'
set xlabel 'percentile'
set ylabel 'latency, us (log scale)'
set logscale y
set grid xtics ytics mytics
set key top left
set xrange [0:5]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy GET', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 2 title 'twemproxy pipelined GET', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster GET', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 2 title 'cluster pipelined GET'
unset output
