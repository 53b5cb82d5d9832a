# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "GET" 2.08 2.81 1.15305 6.04305
"twemproxy" "pipelined GET" 0.61 0.75 0.199508 1.55951
"cluster" "GET" 1.37 0 1.24851 2.61851
"cluster" "pipelined GET" 0.37 0 0.182577 0.552577
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "GET" 14615.3 14570.6 15643.7 4800.51 4308.99 5062.66 14245634
"twemproxy" "pipelined GET" 63472.2 57804.4 72655.9 6504.45 4571.14 9732.1 14245634
"cluster" "GET" 49994.2 42745.1 51874.1 12222.5 10321.9 12484.6 1810039
"cluster" "pipelined GET" 157228 143637 228991 19857.4 15761.4 20643.8 1810039
EOD

$lat0 << EOD
-0 29.909
0.25 336.896
0.5 559.104
0.75 849.92
1 1282.05
1.25 2011.14
1.5 2957.31
1.75 3907.58
2 4800.51
2.25 5849.09
2.5 7454.72
2.75 9928.7
3 12353.5
3.25 17629.2
3.5 21430.3
3.75 25231.4
4 29163.5
4.25 31522.8
4.5 31653.9
4.75 45482
5 45482
EOD
$lat1 << EOD
-0 67.788
0.25 1017.86
0.5 1462.27
0.75 1945.6
1 2564.1
1.25 3334.14
1.5 4276.22
1.75 5292.03
2 6504.45
2.25 8683.52
2.5 9666.56
2.75 10715.1
3 14778.4
3.25 19726.3
3.5 20119.6
3.75 20381.7
4 21168.1
4.25 21168.1
4.5 21299.2
4.75 21299.2
5 21299.2
EOD
$lat2 << EOD
-0 13.152
0.25 132.608
0.5 431.104
0.75 915.456
1 1560.58
1.25 3088.38
1.5 5259.26
1.75 7487.49
2 10321.9
2.25 12288
2.5 13926.4
2.75 16351.2
3 21954.6
3.25 41812
3.5 48103.4
3.75 48627.7
4 49938.4
4.25 54657
4.5 54657
4.75 60948.5
5 60948.5
EOD
$lat3 << EOD
-0 29.795
0.25 480.256
0.5 2367.49
0.75 4243.46
1 6537.22
1.25 9797.63
1.5 13336.6
1.75 16023.6
2 19857.4
2.25 24576
2.5 27197.4
2.75 28901.4
3 38928.4
3.25 40763.4
3.5 41025.5
3.75 41287.7
4 41287.7
4.25 41496.7
4.5 41496.7
4.75 41496.7
5 41496.7
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
