# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "GET" 31.63 51.92 24.5518 108.102
"twemproxy" "pipelined GET" 9.6 12.12 3.73726 25.4573
"cluster" "GET" 20.64 0 13.9715 34.6115
"cluster" "pipelined GET" 5.54 0 2.64036 8.18036
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "GET" 17629.2 17629.2 17629.2 2002.94 2002.94 2002.94 14245634
"twemproxy" "pipelined GET" 76270.7 76270.7 76270.7 2973.7 2973.7 2973.7 14245634
"cluster" "GET" 56029 56029 56029 1929.22 1929.22 1929.22 1810039
"cluster" "pipelined GET" 232714 232714 232714 3710.98 3710.98 3710.98 1810039
EOD

$lat0 << EOD
-0 56.617
0.25 443.392
0.5 604.16
0.75 755.712
1 911.36
1.25 1077.25
1.5 1282.05
1.75 1568.77
2 2002.94
2.25 2416.64
2.5 2809.86
2.75 3301.38
3 3923.97
3.25 4472.83
3.5 4898.82
3.75 5423.1
4 5914.62
4.25 6537.22
4.5 7421.95
4.75 8421.38
5 8880.13
5.25 10518.5
5.5 11239.4
5.75 14057.5
6 14057.5
EOD
$lat1 << EOD
-0 76.093
0.25 1060.86
0.5 1372.16
0.75 1634.3
1 1888.26
1.25 2138.11
1.5 2383.87
1.75 2662.4
2 2973.7
2.25 3334.14
2.5 3743.74
2.75 4169.73
3 4669.44
3.25 5521.41
3.5 6275.07
3.75 6930.43
4 8552.45
4.25 9732.1
4.5 10059.8
4.75 10518.5
5 11632.6
5.25 12877.8
5.5 12877.8
5.75 12877.8
6 12877.8
EOD
$lat2 << EOD
-0 15.629
0.25 400.384
0.5 608.256
0.75 792.576
1 976.896
1.25 1175.55
1.5 1396.74
1.75 1642.5
2 1929.22
2.25 2269.18
2.5 2629.63
2.75 3104.77
3 3923.97
3.25 4669.44
3.5 5128.19
3.75 5619.71
4 6307.84
4.25 6995.97
4.5 7290.88
4.75 7880.7
5 8273.92
5.25 8814.59
5.5 18153.5
5.75 19595.3
6 19595.3
EOD
$lat3 << EOD
-0 37.31
0.25 915.456
0.5 1347.58
0.75 1708.03
1 2043.9
1.25 2383.87
1.5 2777.09
1.75 3219.46
2 3710.98
2.25 4308.99
2.5 4800.51
2.75 5357.57
3 5881.86
3.25 6569.98
3.5 7487.49
3.75 8110.08
4 8273.92
4.25 10453
4.5 10518.5
4.75 10977.3
5 10977.3
5.25 10977.3
5.5 11827.1
5.75 11827.1
6 11827.1
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
set xrange [0:6]
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
set xrange [0:6]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy GET', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 2 title 'twemproxy pipelined GET', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster GET', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 2 title 'cluster pipelined GET'
unset output
