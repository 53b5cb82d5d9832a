# Charts of a `clusterpipe compare` run, written by clusterpipe.
# Redraw by hand: cd to this directory, then `gnuplot charts.gp`.
if (!exists('suffix')) suffix = ''

# setup, call type, redis / twemproxy / client / total CPU-seconds
$cpu << EOD
"twemproxy" "GET" 302.3 545.58 249.122 1097
"twemproxy" "pipelined GET" 98.35 132.02 38.959 269.329
"cluster" "GET" 202.82 0 141.942 344.762
"cluster" "pipelined GET" 50.38 0 27.3489 77.7289
EOD

# setup, call type, ops/s med min max, p99 us med min max, colour
$perf << EOD
"twemproxy" "GET" 14250.2 14250.2 14250.2 4210.69 4210.69 4210.69 14245634
"twemproxy" "pipelined GET" 61932.8 61932.8 61932.8 6012.93 6012.93 6012.93 14245634
"cluster" "GET" 46971.4 46971.4 46971.4 2777.09 2777.09 2777.09 1810039
"cluster" "pipelined GET" 215811 215811 215811 5718.02 5718.02 5718.02 1810039
EOD

$lat0 << EOD
-0 48.491
0.25 420.864
0.5 694.272
0.75 980.992
1 1306.62
1.25 1732.61
1.5 2334.72
1.75 3203.07
2 4210.69
2.25 5292.03
2.5 6635.52
2.75 8421.38
3 10518.5
3.25 12812.3
3.5 15368.2
3.75 18284.5
4 21561.3
4.25 25886.7
4.5 29950
4.75 35520.5
5 44957.7
5.25 59899.9
5.5 117703
5.75 184025
6 224920
6.25 422576
6.5 424673
6.75 567440
7 567440
EOD
$lat1 << EOD
-0 67.777
0.25 1126.4
0.5 1626.11
0.75 2105.34
1 2646.02
1.25 3284.99
1.5 4055.04
1.75 4964.35
2 6012.93
2.25 7290.88
2.5 8814.59
2.75 10518.5
3 12419.1
3.25 14647.3
3.5 16973.8
3.75 18939.9
4 21168.1
4.25 23265.3
4.5 27066.4
4.75 30605.3
5 33685.5
5.25 36569.1
5.5 43384.8
5.75 45482
6 45482
6.25 53870.6
6.5 53870.6
6.75 53870.6
7 53870.6
EOD
$lat2 << EOD
-0 14.477
0.25 365.568
0.5 686.08
0.75 964.608
1 1232.9
1.25 1519.62
1.5 1855.49
1.75 2269.18
2 2777.09
2.25 3399.68
2.5 4087.81
2.75 4800.51
3 5685.25
3.25 6864.9
3.5 8273.92
3.75 10321.9
4 12615.7
4.25 16023.6
4.5 19333.1
4.75 23003.1
5 26017.8
5.25 28246
5.5 29163.5
5.75 30605.3
6 31522.8
6.25 31785
6.5 33095.7
6.75 34996.2
7 34996.2
EOD
$lat3 << EOD
-0 26.6
0.25 555.008
0.5 1224.7
0.75 1814.53
1 2367.49
1.25 2990.08
1.5 3760.13
1.75 4702.21
2 5718.02
2.25 6995.97
2.5 8552.45
2.75 10387.5
3 12222.5
3.25 13926.4
3.5 16351.2
3.75 19595.3
4 22085.6
4.25 24969.2
4.5 28246
4.75 34734.1
5 34996.2
5.25 36569.1
5.5 40239.1
5.75 40418
6 40418
6.25 40418
6.5 40418
6.75 40418
7 40418
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
set xrange [0:7]
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
set xrange [0:7]
set xtics ('0' 0, '50' 0.30103, '90' 1, '99' 2, '99.9' 3, '99.99' 4, '99.999' 5, '99.9999' 6)
plot $lat0 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 1 title 'twemproxy GET', \
     $lat1 using 1:2 with lines lw 2 lc rgb '#d95f02' dt 2 title 'twemproxy pipelined GET', \
     $lat2 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 1 title 'cluster GET', \
     $lat3 using 1:2 with lines lw 2 lc rgb '#1b9e77' dt 2 title 'cluster pipelined GET'
unset output
